package io.kdapack.actors.pipeline;

/**
 * An un-normalised masked loss: {@code sum = Σ ce·mask}, {@code count = Σ mask} (DESIGN §4). Sums add across
 * micro-batches; the reported loss is always {@code Σ sums / Σ counts}, and 0 when nothing counted.
 */
public record LossSum(double sum, double count) {

    public static final LossSum ZERO = new LossSum(0, 0);

    public LossSum {
        if (!Double.isFinite(sum) || !Double.isFinite(count) || count < 0) {
            throw new IllegalArgumentException("loss sum and count must be finite, count >= 0; got sum " + sum
                    + ", count " + count);
        }
    }

    public LossSum plus(LossSum other) {
        return new LossSum(sum + other.sum, count + other.count);
    }

    /** {@code sum / count}, or 0 for an empty mask (never NaN). */
    public double mean() {
        return count == 0 ? 0 : sum / count;
    }
}
