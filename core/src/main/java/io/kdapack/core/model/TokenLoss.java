package io.kdapack.core.model;

import io.kdapack.core.loss.LossReport;

/**
 * The masked per-token cross-entropy of one prediction head (main or MTP) over {@code T} tokens, and the gradient
 * that flows back into the head's input ({@link LmHead#loss}).
 *
 * @param perToken {@code [T]} cross-entropy where the mask is 1, else 0
 * @param report   {@code Σ ce·mask} and {@code Σ mask}
 * @param dh       {@code [T,d]} gradient of {@code Σ_t weight·mask_t·ce_t} with respect to the head's input, or null
 *                 when no backward was asked for
 */
record TokenLoss(double[] perToken, LossReport report, float[] dh) {
}
