package io.kdapack.actors.pipeline;

/**
 * The losses of one micro-batch's forward pass.
 *
 * @param main the language-model loss
 * @param mtp  the multi-token-prediction loss (already scaled as configured), or null when the model has no
 *             MTP head
 */
public record MicroBatchLoss(LossSum main, LossSum mtp) {

    public MicroBatchLoss {
        if (main == null) {
            throw new IllegalArgumentException("main loss is required");
        }
    }
}
