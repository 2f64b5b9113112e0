package io.kdapack.core.loss;

/**
 * The loss of one micro-batch in one call: per-token cross-entropy, Megatron's report (masked sum and count), and
 * optionally the gradient of {@code tokenWeight · Σ_t mask_t · ce_t} with respect to the logits. The weight comes
 * from {@link LossScaling#tokenWeight(int)} (or {@link LossScaling#mtpTokenWeight} for the MTP head).
 */
public final class MaskedCrossEntropy {

    private MaskedCrossEntropy() {
    }

    /**
     * @param perTokenLoss {@code [T]} cross-entropy of every token, masked or not
     * @param report       masked sum and count
     */
    public record Result(double[] perTokenLoss, LossReport report) {
    }

    /**
     * @param logits      {@code [T,V]}
     * @param labels      {@code [T]}
     * @param lossMask    {@code [T]} 0 or 1
     * @param vocab       {@code V}
     * @param tokenWeight weight of each loss token in the backward pass
     * @param gradLogits  {@code [T,V]} overwritten with the gradient; {@code null} for the forward pass only
     */
    public static Result compute(float[] logits, int[] labels, float[] lossMask, int vocab, double tokenWeight,
                                 float[] gradLogits) {
        CrossEntropy.Result ce = CrossEntropy.forward(logits, labels, vocab);
        LossReport report = LossReport.of(ce.loss(), lossMask);
        if (gradLogits != null) {
            double[] weights = new double[labels.length];
            for (int t = 0; t < weights.length; t++) {
                weights[t] = lossMask[t] * tokenWeight;
            }
            CrossEntropy.backward(logits, labels, vocab, ce.logSumExp(), weights, gradLogits);
        }
        return new Result(ce.loss(), report);
    }
}
