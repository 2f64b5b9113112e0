package io.kdapack.core.loss;

import java.util.Arrays;
import java.util.List;

/**
 * The weight each loss token gets in the backward pass of a global batch of M micro-batches, so that the
 * accumulated gradient is the gradient of the {@link LossMode}'s objective. The loss-token counts come from the
 * loss masks alone, so the weights are known before any forward pass and gradients come out already scaled
 * (Megatron scales per-token-mode gradients after accumulation instead; the result is the same up to rounding).
 *
 * <p>Multi-token prediction follows Megatron's {@code MTPLossAutoScaler}: the MTP cross-entropy of each depth is
 * scaled by {@code loss_factor / depth}; in {@link LossMode#PER_MICROBATCH_MEAN} it is divided by the MTP
 * layer's own (rolled) token count of the micro-batch and by M, in {@link LossMode#PER_TOKEN} by the main
 * loss's global token count.
 */
public final class LossScaling {
    private final LossMode mode;
    private final long[] counts;
    private final long globalCount;

    private LossScaling(LossMode mode, long[] counts) {
        this.mode = mode;
        this.counts = counts;
        this.globalCount = Arrays.stream(counts).sum();
    }

    /**
     * @param mode   the reduction
     * @param counts {@code [M]} loss tokens per micro-batch ({@link LossReport#count(float[])}), M ≥ 1
     */
    public static LossScaling of(LossMode mode, long[] counts) {
        if (mode == null) {
            throw new IllegalArgumentException("mode must not be null");
        }
        if (counts.length == 0) {
            throw new IllegalArgumentException("counts: need at least one micro-batch, got 0");
        }
        for (int m = 0; m < counts.length; m++) {
            if (counts[m] < 0) {
                throw new IllegalArgumentException("counts: micro-batch " + m + " has count " + counts[m] + " < 0");
            }
        }
        return new LossScaling(mode, counts.clone());
    }

    /** The scaling of micro-batches with these reports (their counts). */
    public static LossScaling of(LossMode mode, List<LossReport> microBatches) {
        return of(mode, microBatches.stream().mapToLong(LossReport::count).toArray());
    }

    public LossMode mode() {
        return mode;
    }

    public int numMicroBatches() {
        return counts.length;
    }

    /** {@code Σ_m count_m}. */
    public long globalCount() {
        return globalCount;
    }

    /** Weight of each loss token's cross-entropy in micro-batch {@code m}; masked tokens get 0. */
    public double tokenWeight(int microBatch) {
        long count = countOf(microBatch);
        return switch (mode) {
            case PER_MICROBATCH_MEAN -> 1.0 / Math.max(count, 1) / counts.length;
            case PER_TOKEN -> 1.0 / Math.max(globalCount, 1);
        };
    }

    /**
     * Weight of each MTP loss token's cross-entropy in micro-batch {@code m}.
     *
     * @param mtpCount   loss tokens of this MTP depth in the micro-batch (its rolled mask)
     * @param lossFactor Megatron's {@code mtp_loss_scaling_factor}
     * @param depth      number of MTP layers ({@code mtp_num_layers}), ≥ 1
     */
    public double mtpTokenWeight(int microBatch, long mtpCount, double lossFactor, int depth) {
        if (depth < 1) {
            throw new IllegalArgumentException("depth must be >= 1, got " + depth);
        }
        if (mtpCount < 0) {
            throw new IllegalArgumentException("mtpCount must be >= 0, got " + mtpCount);
        }
        countOf(microBatch);
        double scale = lossFactor / depth;
        return switch (mode) {
            case PER_MICROBATCH_MEAN -> scale / Math.max(mtpCount, 1) / counts.length;
            case PER_TOKEN -> scale / Math.max(globalCount, 1);
        };
    }

    /** The per-token weights {@code [T]} of micro-batch {@code m}: {@code mask_t · tokenWeight(m)}. */
    public double[] tokenWeights(int microBatch, float[] lossMask) {
        double w = tokenWeight(microBatch);
        double[] out = new double[lossMask.length];
        for (int t = 0; t < out.length; t++) {
            out[t] = lossMask[t] * w;
        }
        return out;
    }

    /**
     * The objective whose gradient the weights produce: {@code Σ_m tokenWeight(m) · sum_m}. With
     * {@link LossMode#PER_MICROBATCH_MEAN} this is also Megatron's logged MTP loss (mean of per-micro-batch means,
     * before the factor).
     */
    public double objective(List<LossReport> microBatches) {
        if (microBatches.size() != counts.length) {
            throw new IllegalArgumentException("microBatches: " + microBatches.size() + " reports, expected " + counts.length);
        }
        double total = 0;
        for (int m = 0; m < counts.length; m++) {
            LossReport r = microBatches.get(m);
            if (r.count() != counts[m]) {
                throw new IllegalArgumentException("microBatches: report " + m + " has count " + r.count()
                        + ", the scaling was built for " + counts[m]);
            }
            total += tokenWeight(m) * r.sum();
        }
        return total;
    }

    /** Objective of {@code microBatches} under {@code mode}. */
    public static double objective(LossMode mode, List<LossReport> microBatches) {
        return of(mode, microBatches).objective(microBatches);
    }

    private long countOf(int microBatch) {
        if (microBatch < 0 || microBatch >= counts.length) {
            throw new IllegalArgumentException("microBatch " + microBatch + " outside [0, " + counts.length + ")");
        }
        return counts[microBatch];
    }
}
