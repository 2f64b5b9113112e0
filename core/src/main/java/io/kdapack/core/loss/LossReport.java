package io.kdapack.core.loss;

import java.util.List;

/**
 * What Megatron's {@code loss_func} reports for one micro-batch: the masked cross-entropy sum and the number
 * of loss tokens. Reports add up over micro-batches (and data-parallel ranks).
 *
 * @param sum   {@code Σ_t ce_t · mask_t}
 * @param count {@code Σ_t mask_t} (the mask is 0/1)
 */
public record LossReport(double sum, long count) {

    /** A micro-batch without loss tokens. */
    public static final LossReport EMPTY = new LossReport(0, 0);

    public LossReport {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        if (count == 0 && sum != 0) {
            throw new IllegalArgumentException("a report with count 0 must have sum 0, got " + sum);
        }
    }

    /**
     * The report of one micro-batch.
     *
     * @param perTokenLoss {@code [T]} cross-entropy per token (all tokens of the micro-batch, e.g. {@code [B·L]})
     * @param lossMask     {@code [T]} 0 or 1
     */
    public static LossReport of(double[] perTokenLoss, float[] lossMask) {
        if (perTokenLoss.length != lossMask.length) {
            throw new IllegalArgumentException("lossMask: length " + lossMask.length + ", expected " + perTokenLoss.length
                    + " (one per token)");
        }
        double sum = 0;
        for (int t = 0; t < lossMask.length; t++) {
            if (isLossToken(lossMask, t)) {
                sum += perTokenLoss[t];
            }
        }
        return new LossReport(sum, count(lossMask));
    }

    /** Number of loss tokens in a mask {@code [T]} of 0/1 values (known before the forward pass). */
    public static long count(float[] lossMask) {
        long count = 0;
        for (int t = 0; t < lossMask.length; t++) {
            if (isLossToken(lossMask, t)) {
                count++;
            }
        }
        return count;
    }

    private static boolean isLossToken(float[] lossMask, int t) {
        float m = lossMask[t];
        if (m != 0f && m != 1f) {
            throw new IllegalArgumentException("lossMask: value " + m + " at token " + t + ", expected 0 or 1");
        }
        return m == 1f;
    }

    public LossReport plus(LossReport other) {
        return new LossReport(sum + other.sum, count + other.count);
    }

    /** Token mean {@code sum / count}; 0 when there are no loss tokens (never NaN). */
    public double mean() {
        return count == 0 ? 0.0 : sum / count;
    }

    /** The reports added up. */
    public static LossReport total(List<LossReport> reports) {
        LossReport total = EMPTY;
        for (LossReport r : reports) {
            total = total.plus(r);
        }
        return total;
    }

    /**
     * Megatron's logged {@code lm loss} for a global batch, in both accumulation modes: {@code Σ sums / Σ counts}
     * (0 for a batch without any loss token, where Megatron would print NaN).
     */
    public static double logged(List<LossReport> microBatches) {
        return total(microBatches).mean();
    }
}
