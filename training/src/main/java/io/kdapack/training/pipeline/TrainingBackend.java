package io.kdapack.training.pipeline;

/**
 * Everything the actor pipeline needs from the training loop for one job: what to run ({@link #plan}) and
 * the three stages' work. The pipeline closes each stage's object when that stage stops.
 */
public interface TrainingBackend {

    TrainingPlan plan();

    /** Loader stage. */
    SampleSource samples();

    /** Segmenter stage. */
    BatchSegmenter segmenter();

    /** Model stage: created lazily so that a GPU context can be created on the compute thread itself. */
    StepCompute createCompute() throws Exception;

    /**
     * The step a new run will resume from: that of the newest complete checkpoint, which the model stage's
     * {@code restoreLatestCheckpoint()} restores; 0 (the default) for a fresh run. Shown in a job's status before the
     * model stage has restored it.
     */
    default long resumeStep() throws java.io.IOException {
        return 0;
    }

    /** The run's expected peak heap, for the job manager's admission control; unknown by default. */
    default MemoryEstimate memoryEstimate() {
        return MemoryEstimate.UNKNOWN;
    }
}
