package io.kdapack.config;

/**
 * A training run ({@code train}). A global batch is {@code numMicrobatches} micro-batches of
 * {@code microBatchSize} samples of {@code seqLength} tokens.
 *
 * @param seed                  seed of weight initialisation and of the Megatron sample order
 * @param steps                 optimizer steps
 * @param microBatchSize        samples per micro-batch
 * @param numMicrobatches       micro-batches per optimizer step (gradient accumulation)
 * @param seqLength             tokens per sample L
 * @param calculatePerTokenLoss Megatron's {@code calculate_per_token_loss}: global token mean instead of the mean
 *                              of per-micro-batch means
 * @param threads               compute threads; 0: all available processors
 * @param backend               compute backend
 * @param isolation             KDA state and short-convolution resets at document boundaries (false reproduces a
 *                              model without document isolation)
 */
public record TrainConfig(long seed, int steps, int microBatchSize, int numMicrobatches, int seqLength,
                          boolean calculatePerTokenLoss, OptimizerConfig optimizer, DataConfig data,
                          CheckpointConfig checkpoint, int threads, Backend backend, boolean isolation) {

    public static TrainConfig defaults() {
        return new TrainConfig(1234, 800, 4, 2, 128, false, OptimizerConfig.defaults(), DataConfig.defaults(),
                CheckpointConfig.defaults(), 0, Backend.AUTO, true);
    }

    /** Samples per optimizer step. */
    public int globalBatchSize() {
        return microBatchSize * numMicrobatches;
    }
}
