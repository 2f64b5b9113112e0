package io.kdapack.config;

import io.kdapack.core.backend.Backend;
import io.kdapack.core.optim.OptimizerConfig;

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
 * @param evalInterval          Megatron's {@code --eval-interval}: the validation loss every this many steps and after
 *                              the last one; 0: no validation
 * @param evalIters             Megatron's {@code --eval-iters}: global batches of the valid split per evaluation
 * @param dataParallel          data-parallel ranks N: each step's micro-batches form N contiguous blocks whose gradients
 *                              are accumulated apart and summed in block order (docs/training.md, "Data parallel"); on
 *                              one machine the N blocks run one after the other, on a cluster one block per worker.
 *                              {@code numMicrobatches} is a multiple of it
 */
public record TrainConfig(long seed, int steps, int microBatchSize, int numMicrobatches, int seqLength,
                          boolean calculatePerTokenLoss, OptimizerConfig optimizer, DataConfig data,
                          CheckpointConfig checkpoint, int threads, Backend backend, boolean isolation,
                          int evalInterval, int evalIters, int dataParallel) {

    public static TrainConfig defaults() {
        return new TrainConfig(1234, 800, 4, 2, 128, false, OptimizerConfig.defaults(), DataConfig.defaults(),
                CheckpointConfig.defaults(), 0, Backend.AUTO, true, 0, 10, 1);
    }

    /** Whether the run reports a validation loss ({@code eval_interval > 0}). */
    public boolean validates() {
        return evalInterval > 0;
    }

    /**
     * Megatron's {@code get_train_valid_test_num_samples} for the valid split:
     * {@code (steps div eval_interval + 1) · eval_iters · global batch} (every evaluation in the loop and the one after
     * it); 0 without validation.
     *
     * @throws ArithmeticException when the product does not fit a long
     */
    public long validSamples() {
        return validates() ? Math.multiplyExact(Math.multiplyExact((long) steps / evalInterval + 1, (long) evalIters),
                (long) globalBatchSize()) : 0;
    }

    /** Micro-batches of one data-parallel block (one rank's share of a step): {@code numMicrobatches / dataParallel}. */
    public int microBatchesPerRank() {
        return numMicrobatches / dataParallel;
    }

    /** Samples per optimizer step. */
    public int globalBatchSize() {
        return microBatchSize * numMicrobatches;
    }
}
