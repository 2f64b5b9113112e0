package io.kdapack.actors.pipeline;

/**
 * The losses of one optimizer step, accumulated over its micro-batches.
 *
 * @param step         the optimizer step (1-based)
 * @param microBatches M, the micro-batches accumulated
 * @param main         Σ over micro-batches of the language-model loss sums and counts
 * @param mtp          the same for the MTP loss, or null without an MTP head
 * @param positions    B·T summed over the micro-batches
 * @param segments     segments (documents) summed over the micro-batches
 */
public record StepLoss(long step, int microBatches, LossSum main, LossSum mtp, long positions, long segments) {
}
