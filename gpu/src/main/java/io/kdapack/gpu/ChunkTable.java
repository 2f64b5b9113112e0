package io.kdapack.gpu;

import io.kdapack.core.kda.Segments;

/**
 * The chunk table the KDA kernels walk: every sequence is cut into {@code ceil(len/64)} chunks of at most
 * {@value #CHUNK} tokens, the last one partial; no chunk straddles a boundary and nothing is padded, so the
 * work of a packed batch equals the work of the same documents run one by one.
 *
 * @param chunkStart    {@code [C]} first token of each chunk (flattened token axis)
 * @param chunkLength   {@code [C]} tokens in each chunk, 1 … 64
 * @param seqChunkStart {@code [N+1]} the chunks of sequence n are {@code seqChunkStart[n] … seqChunkStart[n+1]−1};
 *                      a zero-length sequence has none
 */
public record ChunkTable(int[] chunkStart, int[] chunkLength, int[] seqChunkStart) {

    /** Tokens per chunk; must equal {@code KDA_CHUNK} in kda_common.cuh. */
    public static final int CHUNK = 64;

    public static ChunkTable of(Segments segments) {
        int n = segments.count();
        int total = 0;
        for (int s = 0; s < n; s++) {
            total += (segments.length(s) + CHUNK - 1) / CHUNK;
        }
        int[] start = new int[total];
        int[] length = new int[total];
        int[] seqStart = new int[n + 1];
        int c = 0;
        for (int s = 0; s < n; s++) {
            seqStart[s] = c;
            for (int t = segments.start(s); t < segments.end(s); t += CHUNK) {
                start[c] = t;
                length[c] = Math.min(CHUNK, segments.end(s) - t);
                c++;
            }
        }
        seqStart[n] = c;
        return new ChunkTable(start, length, seqStart);
    }

    /** Number of chunks C. */
    public int count() {
        return chunkStart.length;
    }

    /** Number of sequences N. */
    public int sequences() {
        return seqChunkStart.length - 1;
    }

    /**
     * Sequence of every token ({@code [T]}), −1 for padding: the short convolution's per-token lookup.
     */
    public static int[] tokenSequence(Segments segments) {
        int[] seq = new int[segments.tokens()];
        java.util.Arrays.fill(seq, -1);
        for (int s = 0; s < segments.count(); s++) {
            java.util.Arrays.fill(seq, segments.start(s), segments.end(s), s);
        }
        return seq;
    }
}
