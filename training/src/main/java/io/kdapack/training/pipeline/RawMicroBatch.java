package io.kdapack.training.pipeline;

/**
 * One micro-batch as the loader reads it: {@code B} samples in Megatron order, each the {@code L + x} tokens
 * Megatron's GPT dataset reads for a sample ({@code raw_text}; {@code x = 1} with its extra token, else 0),
 * padded at the end with the pad id where the data ran out.
 *
 * @param index       global micro-batch index
 * @param batchSize   B
 * @param sampleWidth {@code L + x}
 * @param tokens      {@code [B, L+x]} row-major
 * @param realLengths {@code [B]} tokens of each row that were read (the rest is padding), each in
 *                    {@code [0, L+x]}
 */
public record RawMicroBatch(long index, int batchSize, int sampleWidth, int[] tokens, int[] realLengths) {

    public RawMicroBatch {
        if (index < 0) {
            throw new IllegalArgumentException("index must be >= 0, got " + index);
        }
        if (batchSize < 1 || sampleWidth < 1) {
            throw new IllegalArgumentException("need batchSize >= 1 and sampleWidth >= 1, got " + batchSize
                    + " and " + sampleWidth);
        }
        if (tokens.length != (long) batchSize * sampleWidth) {
            throw new IllegalArgumentException("tokens has " + tokens.length + " entries, expected batchSize·sampleWidth = "
                    + (long) batchSize * sampleWidth);
        }
        if (realLengths.length != batchSize) {
            throw new IllegalArgumentException("realLengths has " + realLengths.length + " entries, expected batchSize = "
                    + batchSize);
        }
        for (int row = 0; row < batchSize; row++) {
            if (realLengths[row] < 0 || realLengths[row] > sampleWidth) {
                throw new IllegalArgumentException("realLengths[" + row + "] = " + realLengths[row] + " outside [0, "
                        + sampleWidth + "]");
            }
        }
    }
}
