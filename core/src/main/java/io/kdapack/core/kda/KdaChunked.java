package io.kdapack.core.kda;

import java.lang.ref.Cleaner;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fast CPU backend: the chunked WY/UT form of architecture §2 ({@link KdaChunk}), chunks of 64 tokens that
 * never straddle a sequence boundary and are never padded (the last chunk of a sequence is partial), one
 * task per (sequence, value head) on all cores.
 *
 * <p>A training forward keeps every chunk's start state and, while the intermediates kept by this backend's live
 * tapes stay within {@link #KEPT_FLOATS} (all layers together), every chunk's intermediates, so the backward walks
 * the chunks in reverse without running the forward again; beyond the budget a call keeps only the start states
 * and its backward recomputes each chunk's intermediates (bitwise the same result). Kept intermediates return to a
 * pool, and to the budget, after the backward, or once a tape that never had a backward is garbage collected.
 */
public final class KdaChunked extends HeadParallelBackend<KdaChunked.HeadTape> {

    /**
     * Floats of chunk intermediates that the live tapes of one backend may keep (256 MiB; one chunk-head of
     * K=V=64 holds about 180 KB, of K=V=128 about 310 KB); a call that does not fit recomputes them.
     */
    static final long KEPT_FLOATS = 64L << 20;

    /** Returns the intermediates of tapes that were dropped without a backward. */
    private static final Cleaner CLEANER = Cleaner.create();

    /** Chunk scratch per worker thread, reused across tasks: a packed batch has many short tasks. */
    private final ThreadLocal<KdaChunk> scratch = new ThreadLocal<>();
    /** Intermediates returned by finished backwards, lent to the next training forward. */
    private final ConcurrentLinkedQueue<KdaChunk.Intermediates> spare = new ConcurrentLinkedQueue<>();
    private final long keptFloatsBudget;
    /** Floats of intermediates held by live tapes. */
    private final AtomicLong keptFloats = new AtomicLong();

    /** A chunked backend on all available processors. */
    public KdaChunked() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public KdaChunked(int threads) {
        this(threads, KEPT_FLOATS);
    }

    /** With a budget for kept intermediates other than the default (0 recomputes them all). */
    KdaChunked(int threads, long keptFloatsBudget) {
        super(threads);
        this.keptFloatsBudget = keptFloatsBudget;
    }

    @Override
    public String name() {
        return "cpu-chunked";
    }

    /** What one head's training forward kept: {@code [chunks,K,V]} start states, and maybe intermediates. */
    static final class HeadTape {
        private final float[] starts;
        private final KdaChunk.Intermediates[] kept;
        /** Gives the intermediates back, once: after the backward, or when this tape is collected. */
        private Cleaner.Cleanable release;

        private HeadTape(float[] starts, KdaChunk.Intermediates[] kept) {
            this.starts = starts;
            this.kept = kept;
        }
    }

    /** Floats of intermediates the live tapes of this backend keep. */
    long keptFloats() {
        return keptFloats.get();
    }

    @Override
    public Keep keepForBackward(KdaInputs in) {
        long chunks = 0;
        Segments seg = in.segments();
        for (int n = 0; n < seg.count(); n++) {
            chunks += chunks(seg.length(n));
        }
        long floats = chunks * in.valueHeads() * KdaChunk.Intermediates.floats(in.keyDim(), in.valueDim());
        // Concurrent calls may each see room and overshoot the budget by one call's worth, no more.
        return keptFloats.get() + floats <= keptFloatsBudget ? Keep.INTERMEDIATES : Keep.STATES;
    }

    @Override
    HeadTape forwardHead(HeadSequence s, float[] state, float[] o, Keep keep) {
        KdaChunk chunk = chunkFor(s);
        int size = s.keyDim() * s.valueDim();
        int chunks = chunks(s.length());
        float[] starts = keep == Keep.NOTHING ? null : new float[chunks * size];
        KdaChunk.Intermediates[] kept = keep == Keep.INTERMEDIATES ? borrow(chunk, chunks) : null;
        for (int c = 0; c < chunks; c++) {
            if (starts != null) {
                System.arraycopy(state, 0, starts, c * size, size);
            }
            int offset = c * KdaChunk.SIZE;
            chunk.forward(s, s.row0() + offset, Math.min(KdaChunk.SIZE, s.length() - offset), state, o,
                    kept == null ? null : kept[c]);
        }
        if (starts == null) {
            return null;
        }
        HeadTape tape = new HeadTape(starts, kept);
        if (kept == null) {
            return tape;
        }
        long floats = chunks * KdaChunk.Intermediates.floats(s.keyDim(), s.valueDim());
        keptFloats.addAndGet(floats);
        // The release must not reach the HeadTape, or the tape could never be collected.
        Runnable release = () -> {
            for (KdaChunk.Intermediates intermediates : kept) {
                spare.add(intermediates);
            }
            keptFloats.addAndGet(-floats);
        };
        tape.release = CLEANER.register(tape, release);
        return tape;
    }

    @Override
    void backwardHead(HeadSequence s, float[] h0, HeadTape tape, float[] dO, float[] dState, HeadGradients grads) {
        KdaChunk chunk = chunkFor(s);
        int size = s.keyDim() * s.valueDim();
        float[] s0 = new float[size];
        for (int c = chunks(s.length()) - 1; c >= 0; c--) {
            System.arraycopy(tape.starts, c * size, s0, 0, size);
            int offset = c * KdaChunk.SIZE;
            chunk.backward(s, s.row0() + offset, Math.min(KdaChunk.SIZE, s.length() - offset), s0, dO, dState,
                    grads, tape.kept == null ? null : tape.kept[c]);
        }
        if (tape.release != null) {
            tape.release.clean();
        }
    }

    private static int chunks(int length) {
        return (length + KdaChunk.SIZE - 1) / KdaChunk.SIZE;
    }

    /** {@code chunks} intermediates that fit {@code chunk}'s dimensions, spare ones first. */
    private KdaChunk.Intermediates[] borrow(KdaChunk chunk, int chunks) {
        KdaChunk.Intermediates[] out = new KdaChunk.Intermediates[chunks];
        for (int c = 0; c < chunks; c++) {
            KdaChunk.Intermediates candidate = spare.poll();
            // A spare of other dimensions (another layer shape) is dropped for the garbage collector.
            while (candidate != null && !chunk.fits(candidate)) {
                candidate = spare.poll();
            }
            out[c] = candidate != null ? candidate : chunk.newIntermediates();
        }
        return out;
    }

    private KdaChunk chunkFor(HeadSequence s) {
        KdaChunk current = scratch.get();
        if (current == null || !current.fits(s.keyDim(), s.valueDim())) {
            current = new KdaChunk(s.keyDim(), s.valueDim());
            scratch.set(current);
        }
        return current;
    }
}
