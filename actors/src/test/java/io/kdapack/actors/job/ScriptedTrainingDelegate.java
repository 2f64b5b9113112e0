package io.kdapack.actors.job;

import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;

/** A backend that forwards to another, for tests that change one of its parts. */
class ScriptedTrainingDelegate implements TrainingBackend {
    private final TrainingBackend backend;

    ScriptedTrainingDelegate(TrainingBackend backend) {
        this.backend = backend;
    }

    @Override
    public TrainingPlan plan() {
        return backend.plan();
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
