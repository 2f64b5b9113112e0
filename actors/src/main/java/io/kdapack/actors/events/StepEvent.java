package io.kdapack.actors.events;

/**
 * Metrics of one optimizer step (architecture §5).
 *
 * @param step       optimizer step, 1-based; also the SSE event id
 * @param loss       {@code Σ sums / Σ counts} over the step's micro-batches
 * @param mtpLoss    the same for the MTP head, or null without one
 * @param tokens     positions B·T processed in the step (all micro-batches)
 * @param segments   documents in the step (all micro-batches)
 * @param gradNorm   gradient norm before clipping
 * @param lr         learning rate used by the step
 * @param tokensPerS {@code tokens} divided by the step's wall time
 */
public record StepEvent(long step, double loss, Double mtpLoss, long tokens, long segments, double gradNorm,
                        double lr, double tokensPerS) implements JobEvent {
}
