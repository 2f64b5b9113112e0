package io.kdapack.actors.pipeline;

import io.kdapack.core.model.MicroBatch;
import java.io.IOException;

/**
 * The compute owner of one job: model weights, gradients, optimizer state and checkpoints.
 *
 * <p>Every call comes from one and the same thread (the model actor runs on a pinned dispatcher), so an
 * implementation may bind a GPU context to that thread. One optimizer step of a job is
 * {@code M = TrainingPlan.microBatchesPerStep()} calls of {@link #forwardBackward} followed by one call of
 * {@link #optimizerStep}; {@link #evaluate} and {@link #saveCheckpoint} only ever come between two optimizer
 * steps, never in the middle of one.
 */
public interface StepCompute extends AutoCloseable {

    /**
     * Restores the newest complete checkpoint of this job, if any.
     *
     * @return the number of optimizer steps the restored state has taken; 0 for a fresh start
     */
    long restoreLatestCheckpoint() throws Exception;

    /**
     * Forward and backward pass of one micro-batch; gradients accumulate until {@link #optimizerStep}. The
     * implementation owns the loss reduction mode (per-micro-batch mean averaged over M, or global token
     * mean): it scales the backward pass of this micro-batch accordingly.
     *
     * @return the un-normalised loss sums and mask counts of this micro-batch
     */
    MicroBatchLoss forwardBackward(MicroBatch batch) throws Exception;

    /**
     * Applies the optimizer step to the gradients accumulated over the step's micro-batches and zeroes them.
     *
     * @param accumulated the step's summed losses and counts (global token mean needs {@code Σ counts})
     */
    OptimizerUpdate optimizerStep(StepLoss accumulated) throws Exception;

    /** Forward pass only, with the current weights; no gradient is kept. Bad input throws IllegalArgumentException. */
    BatchLoss evaluate(MicroBatch batch) throws Exception;

    /** Writes a checkpoint of the state after {@code step} optimizer steps, atomically (never half-written). */
    void saveCheckpoint(long step) throws Exception;

    /** Releases the weights and any device context; called once, on the compute thread, when the model stops. */
    @Override
    default void close() throws IOException {
    }
}
