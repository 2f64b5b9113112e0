package io.kdapack.core.model;

import io.kdapack.core.loss.CrossEntropy;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.nn.Parallel;

/**
 * Masked per-token cross-entropy of one prediction head (main or MTP) over {@code T} tokens, rows in parallel blocks
 * (each token's result is independent of the split; the masked sum runs in token order).
 *
 * @param logits  {@code [T,V]}
 * @param labels  {@code [T]}
 * @param mask    {@code [T]} 0/1
 * @param ce      per-token cross-entropy and log-sum-exp of every token
 * @param perToken {@code [T]} cross-entropy where the mask is 1, else 0
 * @param report  {@code Σ ce·mask} and {@code Σ mask}
 */
record TokenLoss(float[] logits, int[] labels, float[] mask, int vocab, CrossEntropy.Result ce, double[] perToken,
                 LossReport report) {
    private static final int BLOCK = 64;

    static TokenLoss of(float[] logits, int[] labels, float[] mask, int vocab) {
        int tokens = labels.length;
        CrossEntropy.Result ce = new CrossEntropy.Result(new double[tokens], new double[tokens]);
        Parallel.forBlocks(tokens, BLOCK, (from, to) -> CrossEntropy.forward(logits, labels, vocab, from, to, ce));
        double[] perToken = new double[tokens];
        for (int t = 0; t < tokens; t++) {
            perToken[t] = mask[t] != 0f ? ce.loss()[t] : 0.0;
        }
        return new TokenLoss(logits, labels, mask, vocab, ce, perToken, LossReport.of(ce.loss(), mask));
    }

    /**
     * {@code ∂(Σ_t weight·mask_t·ce_t)/∂logits [T,V]}, written over {@link #logits} (the backward's last use of them):
     * the head's {@code [T,V]} buffer, the largest of a step, is not allocated a second time. Call once.
     */
    float[] gradient(double weight) {
        int tokens = labels.length;
        double[] weights = new double[tokens];
        for (int t = 0; t < tokens; t++) {
            weights[t] = mask[t] * weight;
        }
        Parallel.forBlocks(tokens, BLOCK, (from, to) ->
                CrossEntropy.backward(logits, labels, vocab, ce.logSumExp(), weights, logits, from, to));
        return logits;
    }
}
