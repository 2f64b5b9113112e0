package io.kdapack.core.linalg;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Large float buffers lent from call to call and given back with whatever they hold, so that a training step
 * does not allocate, and zero on one thread, tens of megabytes of temporaries (the KDA op's per-call tensors,
 * {@link Gemm}'s packed operands). A borrower writes every
 * entry it later reads. Thread-safe; at most {@link #KEPT} buffers and {@link #KEPT_BYTES} bytes wait for reuse (the
 * oldest are dropped), so changing shapes cannot make it grow without bound. The count is large enough for the
 * distinct shapes of a training step: at 32, the LM head's packed weight (32 MiB) was dropped before the next step
 * came back for it, and a step allocated 230 MB of packed operands again.
 */
public final class BufferPool {

    public static final int KEPT = 256;
    public static final long KEPT_BYTES = 512L << 20;

    private final ConcurrentLinkedDeque<float[]> free = new ConcurrentLinkedDeque<>();
    /** Buffers and bytes in {@link #free}, kept beside it: the deque counts its size by walking it. */
    private final AtomicInteger freeCount = new AtomicInteger();
    private final AtomicLong freeBytes = new AtomicLong();

    /** A buffer of exactly {@code length} floats with unspecified contents. */
    public float[] take(int length) {
        for (Iterator<float[]> it = free.iterator(); it.hasNext(); ) {
            float[] buffer = it.next();
            if (buffer.length == length && free.removeFirstOccurrence(buffer)) {
                freeCount.decrementAndGet();
                freeBytes.addAndGet(-4L * length);
                return buffer;
            }
        }
        return new float[length];
    }

    /** Gives buffers back for reuse (null entries are skipped); the caller must not touch them afterwards. */
    public void give(float[]... buffers) {
        for (float[] buffer : buffers) {
            if (buffer != null) {
                freeCount.incrementAndGet();
                freeBytes.addAndGet(4L * buffer.length);
                free.addFirst(buffer);
            }
        }
        while (freeCount.get() > KEPT || freeBytes.get() > KEPT_BYTES) {
            float[] dropped = free.pollLast();
            if (dropped == null) {
                break;
            }
            freeCount.decrementAndGet();
            freeBytes.addAndGet(-4L * dropped.length);
        }
    }
}
