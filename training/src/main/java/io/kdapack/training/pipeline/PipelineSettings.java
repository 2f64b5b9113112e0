package io.kdapack.training.pipeline;

import java.time.Duration;

/**
 * How the actor pipeline runs a job, independent of what it trains.
 *
 * @param prefetch     micro-batches the loader and segmenter keep ready ahead of the model, at most
 * @param pullTimeout  longest wait of the model for its next micro-batch before the job fails
 * @param stepTimeout  longest time one optimizer step (all its micro-batches) may take before the job fails
 * @param storeTimeout longest time a checkpoint or restore may take before the job fails
 */
public record PipelineSettings(int prefetch, Duration pullTimeout, Duration stepTimeout, Duration storeTimeout) {

    public static final PipelineSettings DEFAULT =
            new PipelineSettings(2, Duration.ofMinutes(2), Duration.ofMinutes(30), Duration.ofMinutes(10));

    public PipelineSettings {
        if (prefetch < 1) {
            throw new IllegalArgumentException("prefetch must be >= 1, got " + prefetch);
        }
        for (Duration d : new Duration[] {pullTimeout, stepTimeout, storeTimeout}) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("pipeline timeouts must be positive, got " + d);
            }
        }
    }
}
