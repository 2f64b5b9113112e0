package io.kdapack.core.model;

import java.util.Arrays;

/**
 * One micro-batch of {@code B} rows of {@code L} tokens, every array flattened row-major to {@code [B·L]}:
 * what the segmenter hands the model.
 *
 * @param rows        B
 * @param length      L
 * @param tokens      {@code [B·L]} input token ids
 * @param labels      {@code [B·L]} target ids (the next token)
 * @param lossMask    {@code [B·L]} 1 where the token counts in the loss, else 0
 * @param positionIds {@code [B·L]} RoPE positions (restarting at each document when positions are reset)
 * @param segmentIds  {@code [B·L]} kdapack segment ids: 1-based per document within a row, 0 = padding; a new
 *                    segment starts wherever the id changes
 * @param mtpLabels   {@code [B·L]} multi-token-prediction targets: labels rolled left by one within each segment
 *                    (0 at a segment's last position); null without MTP. The MTP input at position t is the
 *                    embedding of {@code labels[t]}, the token one ahead.
 * @param mtpLossMask {@code [B·L]} the loss mask rolled the same way (0 at a segment's last position); null
 *                    without MTP
 */
public record MicroBatch(int rows, int length, int[] tokens, int[] labels, float[] lossMask, int[] positionIds,
                         int[] segmentIds, int[] mtpLabels, float[] mtpLossMask) {

    public MicroBatch {
        if (rows < 1 || length < 1) {
            throw new IllegalArgumentException("rows and length must be >= 1, got rows=" + rows + " length=" + length);
        }
        int size = Math.multiplyExact(rows, length);
        check("tokens", tokens.length, size);
        check("labels", labels.length, size);
        check("lossMask", lossMask.length, size);
        check("positionIds", positionIds.length, size);
        check("segmentIds", segmentIds.length, size);
        if ((mtpLabels == null) != (mtpLossMask == null)) {
            throw new IllegalArgumentException("mtpLabels and mtpLossMask must both be set or both be null");
        }
        if (mtpLabels != null) {
            check("mtpLabels", mtpLabels.length, size);
            check("mtpLossMask", mtpLossMask.length, size);
        }
    }

    /** {@code B·L}. */
    public int size() {
        return rows * length;
    }

    /** Tokens that count in the main loss. */
    public long lossTokens() {
        return countNonZero(lossMask);
    }

    /** Tokens that count in the MTP loss (0 without MTP). */
    public long mtpLossTokens() {
        return mtpLossMask == null ? 0 : countNonZero(mtpLossMask);
    }

    /** Segments (documents): runs of one non-zero segment id within a row, counted over all rows. */
    public int segmentCount() {
        int count = 0;
        for (int row = 0; row < rows; row++) {
            int previous = 0;
            for (int i = row * length; i < (row + 1) * length; i++) {
                if (segmentIds[i] != 0 && segmentIds[i] != previous) {
                    count++;
                }
                previous = segmentIds[i];
            }
        }
        return count;
    }

    private static long countNonZero(float[] mask) {
        long n = 0;
        for (float m : mask) {
            n += m != 0f ? 1 : 0;
        }
        return n;
    }

    private static void check(String name, int actual, int expected) {
        if (actual != expected) {
            throw new IllegalArgumentException(name + " has " + actual + " entries, expected B·L = " + expected);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MicroBatch m && rows == m.rows && length == m.length && Arrays.equals(tokens, m.tokens)
                && Arrays.equals(labels, m.labels) && Arrays.equals(lossMask, m.lossMask)
                && Arrays.equals(positionIds, m.positionIds) && Arrays.equals(segmentIds, m.segmentIds)
                && Arrays.equals(mtpLabels, m.mtpLabels) && Arrays.equals(mtpLossMask, m.mtpLossMask);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(tokens) + Arrays.hashCode(segmentIds);
    }
}
