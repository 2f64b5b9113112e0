package io.kdapack.training.pipeline;

import io.kdapack.core.model.MicroBatch;
import java.io.IOException;
import java.util.List;

/**
 * The compute owner of one job: model weights, gradients, optimizer state and checkpoints.
 *
 * <p>Every call comes from one and the same thread (the model actor runs on a pinned dispatcher), so an
 * implementation may bind a GPU context to that thread. One optimizer step of a job is one call of
 * {@link #forwardBackward} with the step's {@code M = TrainingPlan.microBatchesPerStep()} micro-batches followed by
 * one call of {@link #optimizerStep}; {@link #evaluate} and {@link #saveCheckpoint} only ever come between two
 * optimizer steps, never in the middle of one.
 */
public interface StepCompute extends AutoCloseable {

    /**
     * Restores the newest complete checkpoint of this job, if any.
     *
     * @return the number of optimizer steps the restored state has taken; 0 for a fresh start
     */
    long restoreLatestCheckpoint() throws Exception;

    /**
     * Forward and backward passes of one optimizer step's micro-batches, in order; gradients accumulate until
     * {@link #optimizerStep}. The step's micro-batches come together, assembled once by the segmenter, because the
     * loss weights of every backward pass may depend on the loss masks of all of them: the implementation owns the
     * loss reduction mode (per-micro-batch mean averaged over M, or global token mean) and scales each backward pass
     * accordingly.
     *
     * @param microBatches the step's M micro-batches, global indices {@code (s−1)·M … s·M−1} in that order
     * @return the un-normalised loss sums and mask counts of each micro-batch, in the same order
     */
    List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) throws Exception;

    /**
     * Applies the optimizer step to the gradients accumulated over the step's micro-batches and zeroes them.
     *
     * @param accumulated the step's summed losses and counts (global token mean needs {@code Σ counts})
     */
    OptimizerUpdate optimizerStep(StepLoss accumulated) throws Exception;

    /** Forward pass only, with the current weights; no gradient is kept. Bad input throws IllegalArgumentException. */
    BatchLoss evaluate(MicroBatch batch) throws Exception;

    /**
     * A copy of the current weights (those after the last {@link #optimizerStep}, whatever micro-batches have run
     * since: forward and backward passes change only gradients), for serving a running job's live weights.
     *
     * @param step optimizer steps the weights have taken (the caller counts them)
     * @throws UnsupportedOperationException when this compute cannot hand out its weights
     */
    default WeightSnapshot snapshotWeights(long step) throws Exception {
        throw new UnsupportedOperationException("this job's model stage cannot copy its weights for serving");
    }

    /** Writes a checkpoint of the state after {@code step} optimizer steps, atomically (never half-written). */
    void saveCheckpoint(long step) throws Exception;

    /** Releases the weights and any device context; called once, on the compute thread, when the model stops. */
    @Override
    default void close() throws IOException {
    }
}
