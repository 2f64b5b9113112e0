package io.kdapack.actors.pipeline;

/**
 * One micro-batch as the loader reads it: {@code B} samples of {@code L+1} consecutive tokens in Megatron
 * order (the extra token gives the last position its label).
 *
 * @param index       global micro-batch index
 * @param batchSize   B
 * @param sampleWidth L+1
 * @param tokens      {@code [B, L+1]} row-major
 */
public record RawMicroBatch(long index, int batchSize, int sampleWidth, int[] tokens) {

    public RawMicroBatch {
        if (index < 0) {
            throw new IllegalArgumentException("index must be >= 0, got " + index);
        }
        if (batchSize < 1 || sampleWidth < 2) {
            throw new IllegalArgumentException("need batchSize >= 1 and sampleWidth >= 2, got " + batchSize
                    + " and " + sampleWidth);
        }
        if (tokens.length != (long) batchSize * sampleWidth) {
            throw new IllegalArgumentException("tokens has " + tokens.length + " entries, expected batchSize·sampleWidth = "
                    + (long) batchSize * sampleWidth);
        }
    }
}
