package io.kdapack.core.kda;

/**
 * The fast CPU backend: the chunked WY/UT form of DESIGN §2 ({@link KdaChunk}), chunks of 64 tokens that
 * never straddle a sequence boundary and are never padded (the last chunk of a sequence is partial), one
 * task per (sequence, value head) on all cores. The backward recomputes the chunk-start states forward,
 * then walks the chunks in reverse.
 */
public final class KdaChunked extends HeadParallelBackend {

    /** Chunk scratch per worker thread, reused across tasks: a packed batch has many short tasks. */
    private final ThreadLocal<KdaChunk> scratch = new ThreadLocal<>();

    /** A chunked backend on all available processors. */
    public KdaChunked() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public KdaChunked(int threads) {
        super(threads);
    }

    @Override
    public String name() {
        return "cpu-chunked";
    }

    @Override
    void forwardHead(HeadSequence s, float[] state, float[] o) {
        KdaChunk chunk = chunkFor(s);
        for (int first = 0; first < s.length(); first += KdaChunk.SIZE) {
            chunk.forward(s, first, Math.min(KdaChunk.SIZE, s.length() - first), state, o);
        }
    }

    @Override
    void backwardHead(HeadSequence s, float[] h0, float[] dO, float[] dState, HeadGradients grads) {
        int size = s.keyDim() * s.valueDim();
        int chunks = (s.length() + KdaChunk.SIZE - 1) / KdaChunk.SIZE;
        KdaChunk chunk = chunkFor(s);
        float[] starts = new float[chunks * size];
        float[] state = h0.clone();
        for (int c = 0; c < chunks; c++) {
            System.arraycopy(state, 0, starts, c * size, size);
            int first = c * KdaChunk.SIZE;
            chunk.forward(s, first, Math.min(KdaChunk.SIZE, s.length() - first), state, null);
        }
        float[] s0 = new float[size];
        for (int c = chunks - 1; c >= 0; c--) {
            System.arraycopy(starts, c * size, s0, 0, size);
            int first = c * KdaChunk.SIZE;
            chunk.backward(s, first, Math.min(KdaChunk.SIZE, s.length() - first), s0, dO, dState, grads);
        }
    }

    private KdaChunk chunkFor(HeadSequence s) {
        KdaChunk chunk = scratch.get();
        if (chunk == null || !chunk.fits(s.keyDim(), s.valueDim())) {
            chunk = new KdaChunk(s.keyDim(), s.valueDim());
            scratch.set(chunk);
        }
        return chunk;
    }
}
