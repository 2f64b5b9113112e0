package io.kdapack.core.loss;

/** Megatron's two ways of reducing the loss over the M micro-batches of a global batch (architecture §4). */
public enum LossMode {
    /**
     * Megatron's default ({@code calculate_per_token_loss = false}): every micro-batch's backward runs on
     * {@code sum_m / max(count_m, 1) / M}; objective {@code (1/M) Σ_m sum_m / max(count_m, 1)}.
     */
    PER_MICROBATCH_MEAN,
    /**
     * {@code calculate_per_token_loss = true}: the gradients of all micro-batch sums are accumulated and then
     * scaled by {@code 1 / max(Σ_m count_m, 1)}; objective {@code Σ_m sum_m / max(Σ_m count_m, 1)}.
     */
    PER_TOKEN;

    /** The mode selected by Megatron's {@code calculate_per_token_loss} flag. */
    public static LossMode of(boolean calculatePerTokenLoss) {
        return calculatePerTokenLoss ? PER_TOKEN : PER_MICROBATCH_MEAN;
    }
}
