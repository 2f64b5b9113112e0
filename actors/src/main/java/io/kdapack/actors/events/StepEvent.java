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
 * @param valLoss    the validation loss of the evaluation after this step ({@code train.eval_interval}), or null
 * @param valMtpLoss its MTP loss, or null without MTP or without an evaluation
 * @param exchangeBytes a data-parallel job's gradient bytes rank 0 sent and received in the step's exchange, or null
 *                      for a job on one worker
 * @param exchangeS     the seconds rank 0 spent in that exchange (not counting the wait for slower ranks), or null
 */
public record StepEvent(long step, double loss, Double mtpLoss, long tokens, long segments, double gradNorm,
                        double lr, double tokensPerS, Double valLoss, Double valMtpLoss, Long exchangeBytes,
                        Double exchangeS) implements JobEvent {

    /** A step of a job on one worker (no gradient exchange). */
    public StepEvent(long step, double loss, Double mtpLoss, long tokens, long segments, double gradNorm, double lr,
                     double tokensPerS, Double valLoss, Double valMtpLoss) {
        this(step, loss, mtpLoss, tokens, segments, gradNorm, lr, tokensPerS, valLoss, valMtpLoss, null, null);
    }

    /** A step without an evaluation. */
    public StepEvent(long step, double loss, Double mtpLoss, long tokens, long segments, double gradNorm, double lr,
                     double tokensPerS) {
        this(step, loss, mtpLoss, tokens, segments, gradNorm, lr, tokensPerS, null, null);
    }
}
