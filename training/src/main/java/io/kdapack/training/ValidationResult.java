package io.kdapack.training;

/**
 * One evaluation on the valid split, reduced as Megatron's {@code evaluate} reduces it: the loss sums and token counts
 * of every micro-batch of its {@code eval_iters} global batches added up, then one division.
 *
 * @param step               optimizer steps completed when it ran
 * @param evaluation         0-based number of this evaluation in the run (which window of the valid iterator it read)
 * @param firstValidSample   first valid-split dataset index read; it read {@code samples} consecutive ones
 * @param samples            valid samples read ({@code eval_iters · global batch})
 * @param loss               {@code Σ loss sums / Σ loss tokens} (0 when no token counted)
 * @param lossTokens         {@code Σ loss tokens}
 * @param mtpLoss            the same token mean for the MTP head (kdapack's addition: Megatron's {@code evaluate} reports
 *                           the language-model loss only), or null without MTP
 */
public record ValidationResult(long step, long evaluation, long firstValidSample, long samples, double loss,
                               long lossTokens, Double mtpLoss) {
}
