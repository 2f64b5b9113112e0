package io.kdapack.core.optim;

/**
 * Hyper-parameters of {@link AdamW} other than the learning rate, which comes from the schedule at every step.
 *
 * @param beta1       decay of the first moment, in [0, 1)
 * @param beta2       decay of the second moment, in [0, 1)
 * @param eps         added to the bias-corrected square root of the second moment, &gt; 0
 * @param weightDecay decoupled weight decay coefficient, ≥ 0 (applied as {@code p ← p·(1 − lr·wd)})
 */
public record AdamWOptions(double beta1, double beta2, double eps, double weightDecay) {

    public AdamWOptions {
        requireIn("beta1", beta1, 0, 1);
        requireIn("beta2", beta2, 0, 1);
        if (!(eps > 0) || !Double.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be a finite number > 0, got " + eps);
        }
        if (!(weightDecay >= 0) || !Double.isFinite(weightDecay)) {
            throw new IllegalArgumentException("weightDecay must be a finite number >= 0, got " + weightDecay);
        }
    }

    private static void requireIn(String name, double value, double from, double toExclusive) {
        if (!(value >= from && value < toExclusive)) {
            throw new IllegalArgumentException(name + " must be in [" + from + ", " + toExclusive + "), got " + value);
        }
    }
}
