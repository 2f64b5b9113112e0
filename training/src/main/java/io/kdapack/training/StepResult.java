package io.kdapack.training;

/**
 * What one optimizer step reports (the fields of architecture §5's {@code step} event and of a {@code metrics.jsonl} line).
 *
 * @param step       optimizer steps completed, this one included (1 for the first)
 * @param loss       the logged language-model loss {@code Σ sums / Σ counts} over the step's micro-batches (0 when no
 *                   token counted)
 * @param mtpLoss    the multi-token-prediction loss before its factor, as Megatron logs it (mean over the micro-batches
 *                   of each one's token mean); null without MTP
 * @param tokens     input positions processed in the step ({@code M·B·L}, padding included)
 * @param segments   documents (segments) in the step's micro-batches, a document cut by a sample boundary counted
 *                   in each sample
 * @param gradNorm   global L2 norm of the gradient before clipping
 * @param lr         learning rate of the update
 * @param tokensPerS {@code tokens} divided by the wall time of the step (the one field that varies run to run)
 * @param valLoss    the validation loss of the evaluation after this step ({@link ValidationResult#loss()}), or null
 *                   when none ran
 * @param valMtpLoss its MTP loss, or null without MTP or without an evaluation
 */
public record StepResult(long step, double loss, Double mtpLoss, long tokens, long segments, double gradNorm, double lr,
                         double tokensPerS, Double valLoss, Double valMtpLoss) {

    /** A step without an evaluation. */
    public StepResult(long step, double loss, Double mtpLoss, long tokens, long segments, double gradNorm, double lr,
                      double tokensPerS) {
        this(step, loss, mtpLoss, tokens, segments, gradNorm, lr, tokensPerS, null, null);
    }

    /** This step with the losses of the evaluation that followed it. */
    public StepResult withValidation(ValidationResult validation) {
        return new StepResult(step, loss, mtpLoss, tokens, segments, gradNorm, lr, tokensPerS, validation.loss(),
                validation.mtpLoss());
    }

    /**
     * One line of JSON with the fields above under snake_case names (architecture §5); doubles printed exactly;
     * {@code val_loss} and {@code val_mtp_loss} only on the lines of steps that were followed by an evaluation.
     */
    public String toJson() {
        return "{\"step\":" + step + ",\"loss\":" + loss + ",\"mtp_loss\":" + mtpLoss + ",\"tokens\":" + tokens
                + ",\"segments\":" + segments + ",\"grad_norm\":" + gradNorm + ",\"lr\":" + lr
                + ",\"tokens_per_s\":" + tokensPerS
                + (valLoss == null ? "" : ",\"val_loss\":" + valLoss + ",\"val_mtp_loss\":" + valMtpLoss) + "}";
    }
}
