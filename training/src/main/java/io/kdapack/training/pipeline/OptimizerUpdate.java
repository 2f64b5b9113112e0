package io.kdapack.training.pipeline;

/**
 * What an optimizer step reports.
 *
 * @param gradNorm     global gradient L2 norm before clipping
 * @param learningRate the learning rate the step used
 */
public record OptimizerUpdate(double gradNorm, double learningRate) {
}
