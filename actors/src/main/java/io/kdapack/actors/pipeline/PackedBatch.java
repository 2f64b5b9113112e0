package io.kdapack.actors.pipeline;

/**
 * One packed micro-batch as the model consumes it (DESIGN §4); every array is {@code [B,T]} row-major.
 * Segment id 0 marks padding; a new segment (document) starts wherever the id changes within a row.
 *
 * @param batchSize   B
 * @param seqLength   T
 * @param tokens      input token ids, {@code >= 0}
 * @param labels      target token ids, {@code >= 0}
 * @param lossMask    1 where the token's loss counts, 0 elsewhere (finite, {@code >= 0})
 * @param positionIds positions restarted at each document, {@code >= 0}
 * @param segmentIds  document ids, {@code >= 0}, 0 = padding
 */
public record PackedBatch(int batchSize, int seqLength, int[] tokens, int[] labels, float[] lossMask,
                          int[] positionIds, int[] segmentIds) {

    public PackedBatch {
        if (batchSize < 1) {
            throw new InvalidBatchException("batch_size", "must be >= 1, got " + batchSize);
        }
        if (seqLength < 1) {
            throw new InvalidBatchException("seq_length", "must be >= 1, got " + seqLength);
        }
        long expected = (long) batchSize * seqLength;
        requireNonNegative("tokens", tokens, expected);
        requireNonNegative("labels", labels, expected);
        requireNonNegative("position_ids", positionIds, expected);
        requireNonNegative("segment_ids", segmentIds, expected);
        requireLength("loss_mask", lossMask == null ? -1 : lossMask.length, expected);
        for (int i = 0; i < lossMask.length; i++) {
            if (!(lossMask[i] >= 0f) || Float.isInfinite(lossMask[i])) {
                throw new InvalidBatchException("loss_mask", "entry " + i + " must be finite and >= 0, got " + lossMask[i]);
            }
        }
    }

    /** B·T, the positions of the batch (padding included). */
    public int positions() {
        return tokens.length;
    }

    /** Number of segments N: runs of equal non-zero ids within each row, summed over rows. */
    public int segmentCount() {
        int count = 0;
        for (int row = 0; row < batchSize; row++) {
            int previous = 0;
            for (int t = row * seqLength; t < (row + 1) * seqLength; t++) {
                int id = segmentIds[t];
                if (id != 0 && id != previous) {
                    count++;
                }
                previous = id;
            }
        }
        return count;
    }

    private static void requireNonNegative(String field, int[] values, long expected) {
        requireLength(field, values == null ? -1 : values.length, expected);
        for (int i = 0; i < values.length; i++) {
            if (values[i] < 0) {
                throw new InvalidBatchException(field, "entry " + i + " must be >= 0, got " + values[i]);
            }
        }
    }

    private static void requireLength(String field, int length, long expected) {
        if (length < 0) {
            throw new InvalidBatchException(field, "is missing");
        }
        if (length != expected) {
            throw new InvalidBatchException(field, "has " + length + " entries, expected batch_size·seq_length = " + expected);
        }
    }
}
