package io.kdapack.core.kda;

import java.util.ArrayList;
import java.util.List;

/**
 * The fast CPU backend: the chunked WY/UT form of DESIGN §2 ({@link KdaChunk}), chunks of 64 tokens that
 * never straddle a sequence boundary and are never padded (the last chunk of a sequence is partial), one
 * task per (sequence, value head) on all cores. The backward runs the chunks forward once more for their
 * start states, keeping each chunk's intermediates (within {@link #KEPT_FLOATS_PER_THREAD}; beyond it they are
 * recomputed), then walks the chunks in reverse.
 */
public final class KdaChunked extends HeadParallelBackend {

    /**
     * Forward intermediates a backward keeps per thread instead of recomputing them (one chunk of K=V=64
     * holds about 200 KB); longer sequences recompute.
     */
    static final long KEPT_FLOATS_PER_THREAD = 8L << 20;

    /** Chunk scratch per worker thread, reused across tasks: a packed batch has many short tasks. */
    private final ThreadLocal<Scratch> scratch = new ThreadLocal<>();
    private final long keptFloatsPerThread;

    /** A chunked backend on all available processors. */
    public KdaChunked() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public KdaChunked(int threads) {
        this(threads, KEPT_FLOATS_PER_THREAD);
    }

    /** With a budget for kept intermediates other than the default (0 recomputes them all). */
    KdaChunked(int threads, long keptFloatsPerThread) {
        super(threads);
        this.keptFloatsPerThread = keptFloatsPerThread;
    }

    @Override
    public String name() {
        return "cpu-chunked";
    }

    @Override
    void forwardHead(HeadSequence s, float[] state, float[] o) {
        KdaChunk chunk = chunkFor(s).chunk();
        for (int first = 0; first < s.length(); first += KdaChunk.SIZE) {
            chunk.forward(s, first, Math.min(KdaChunk.SIZE, s.length() - first), state, o, null);
        }
    }

    @Override
    void backwardHead(HeadSequence s, float[] h0, float[] dO, float[] dState, HeadGradients grads) {
        int size = s.keyDim() * s.valueDim();
        int chunks = (s.length() + KdaChunk.SIZE - 1) / KdaChunk.SIZE;
        Scratch scratchOfThread = chunkFor(s);
        KdaChunk chunk = scratchOfThread.chunk();
        List<KdaChunk.Intermediates> kept = scratchOfThread.keep(chunks, keptFloatsPerThread);
        float[] starts = new float[chunks * size];
        float[] state = h0.clone();
        for (int c = 0; c < chunks; c++) {
            System.arraycopy(state, 0, starts, c * size, size);
            int first = c * KdaChunk.SIZE;
            chunk.forward(s, first, Math.min(KdaChunk.SIZE, s.length() - first), state, null,
                    kept == null ? null : kept.get(c));
        }
        float[] s0 = new float[size];
        for (int c = chunks - 1; c >= 0; c--) {
            System.arraycopy(starts, c * size, s0, 0, size);
            int first = c * KdaChunk.SIZE;
            chunk.backward(s, first, Math.min(KdaChunk.SIZE, s.length() - first), s0, dO, dState, grads,
                    kept == null ? null : kept.get(c));
        }
    }

    private Scratch chunkFor(HeadSequence s) {
        Scratch current = scratch.get();
        if (current == null || !current.chunk().fits(s.keyDim(), s.valueDim())) {
            current = new Scratch(new KdaChunk(s.keyDim(), s.valueDim()), new ArrayList<>(), s.keyDim(), s.valueDim());
            scratch.set(current);
        }
        return current;
    }

    /** One thread's chunk scratch and the intermediates it keeps, grown on demand up to the budget. */
    private record Scratch(KdaChunk chunk, List<KdaChunk.Intermediates> pool, int keyDim, int valueDim) {

        /** Storage for the intermediates of {@code chunks} chunks, or null when that exceeds the budget. */
        List<KdaChunk.Intermediates> keep(int chunks, long budgetFloats) {
            if (chunks * KdaChunk.Intermediates.floats(keyDim, valueDim) > budgetFloats) {
                return null;
            }
            while (pool.size() < chunks) {
                pool.add(chunk.newIntermediates());
            }
            return pool;
        }
    }
}
