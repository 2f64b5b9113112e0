package io.kdapack.training.pipeline;

import io.kdapack.core.loss.LossReport;

/**
 * The losses of one micro-batch's forward pass.
 *
 * @param main the language-model loss report (Megatron's {@code loss_func}: masked sum and count)
 * @param mtp  the multi-token-prediction loss report, or null when the model has no MTP head
 */
public record MicroBatchLoss(LossReport main, LossReport mtp) {

    public MicroBatchLoss {
        if (main == null) {
            throw new IllegalArgumentException("main loss is required");
        }
    }
}
