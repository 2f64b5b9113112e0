package io.kdapack.training.pipeline;

/**
 * What an optimizer step reports.
 *
 * @param gradNorm     global gradient L2 norm before clipping
 * @param learningRate the learning rate the step used
 * @param valLoss      the validation loss of the evaluation that followed the step ({@code train.eval_interval}), or
 *                     null when none ran
 * @param valMtpLoss   its MTP loss, or null without MTP or without an evaluation
 */
public record OptimizerUpdate(double gradNorm, double learningRate, Double valLoss, Double valMtpLoss) {

    /** A step not followed by an evaluation. */
    public OptimizerUpdate(double gradNorm, double learningRate) {
        this(gradNorm, learningRate, null, null);
    }
}
