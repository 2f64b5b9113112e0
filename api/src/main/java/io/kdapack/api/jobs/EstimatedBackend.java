package io.kdapack.api.jobs;

import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.MemoryEstimate;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;

/** A backend with the memory estimate the job manager admits it by ({@link JobMemoryModel}). */
record EstimatedBackend(TrainingBackend backend, MemoryEstimate memoryEstimate) implements TrainingBackend {

    @Override
    public TrainingPlan plan() {
        return backend.plan();
    }

    @Override
    public long resumeStep() throws java.io.IOException {
        return backend.resumeStep();
    }

    @Override
    public SampleSource samples() {
        return backend.samples();
    }

    @Override
    public BatchSegmenter segmenter() {
        return backend.segmenter();
    }

    @Override
    public StepCompute createCompute() throws Exception {
        return backend.createCompute();
    }
}
