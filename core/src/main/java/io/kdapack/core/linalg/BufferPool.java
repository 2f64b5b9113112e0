package io.kdapack.core.linalg;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * Large float buffers lent from call to call and given back with whatever they hold, so that a training step
 * does not allocate, and zero on one thread, tens of megabytes of temporaries (the KDA op's per-call tensors,
 * {@link Gemm}'s packed operands). A borrower writes every
 * entry it later reads. Thread-safe; at most {@link #KEPT} buffers wait for reuse (the oldest are dropped),
 * so changing shapes cannot make it grow without bound.
 */
public final class BufferPool {

    public static final int KEPT = 32;

    private final ConcurrentLinkedDeque<float[]> free = new ConcurrentLinkedDeque<>();

    /** A buffer of exactly {@code length} floats with unspecified contents. */
    public float[] take(int length) {
        for (Iterator<float[]> it = free.iterator(); it.hasNext(); ) {
            float[] buffer = it.next();
            if (buffer.length == length && free.removeFirstOccurrence(buffer)) {
                return buffer;
            }
        }
        return new float[length];
    }

    /** Gives buffers back for reuse (null entries are skipped); the caller must not touch them afterwards. */
    public void give(float[]... buffers) {
        for (float[] buffer : buffers) {
            if (buffer != null) {
                free.addFirst(buffer);
            }
        }
        while (free.size() > KEPT) {
            free.pollLast();
        }
    }
}
