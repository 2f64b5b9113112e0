package io.kdapack.training.pipeline;

/**
 * The shape of a training job.
 *
 * @param totalSteps          optimizer steps of the whole job (a resumed job stops at the same step)
 * @param microBatchesPerStep gradient-accumulation micro-batches M per optimizer step
 * @param checkpointEvery     save a checkpoint after every this many steps (and after the last step)
 */
public record TrainingPlan(long totalSteps, int microBatchesPerStep, long checkpointEvery) {

    public TrainingPlan {
        if (totalSteps < 1) {
            throw new IllegalArgumentException("totalSteps must be >= 1, got " + totalSteps);
        }
        if (microBatchesPerStep < 1) {
            throw new IllegalArgumentException("microBatchesPerStep must be >= 1, got " + microBatchesPerStep);
        }
        if (checkpointEvery < 1) {
            throw new IllegalArgumentException("checkpointEvery must be >= 1, got " + checkpointEvery);
        }
    }

    /** Whether a checkpoint is due after {@code step}. */
    public boolean checkpointDue(long step) {
        return step % checkpointEvery == 0 || step == totalSteps;
    }
}
