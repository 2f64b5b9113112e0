package io.kdapack.actors.pipeline;

import io.kdapack.core.loss.LossReport;

/**
 * The losses of one optimizer step, accumulated over its micro-batches.
 *
 * @param step         the optimizer step (1-based)
 * @param microBatches M, the micro-batches accumulated
 * @param main         Σ over micro-batches of the language-model loss sums and counts; the logged loss is
 *                     {@code main.mean()}
 * @param mtp          the same for the MTP loss, or null without an MTP head
 * @param mtpLoss      the logged MTP loss: the mean over micro-batches of each one's {@code mtp.mean()} (as
 *                     Megatron logs it, docs/training.md), or null without an MTP head
 * @param positions    B·T summed over the micro-batches
 * @param segments     segments (documents) summed over the micro-batches
 */
public record StepLoss(long step, int microBatches, LossReport main, LossReport mtp, Double mtpLoss, long positions,
                       long segments) {
}
