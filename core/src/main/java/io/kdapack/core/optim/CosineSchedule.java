package io.kdapack.core.optim;

/**
 * Megatron's learning-rate schedule with linear warmup from 0 and cosine decay ({@code OptimizerParamScheduler},
 * {@code lr_warmup_init = 0}, {@code lr_decay_style = cosine}). With {@code s} the number of optimizer steps already
 * taken (0 for the first update — Megatron calls {@code step(0)} at construction, so its first update uses
 * {@code lr(0)}, which is 0 when there is a warmup):
 * <pre>
 *   s ≤ W (W &gt; 0):  lr = maxLr · s / W
 *   s &gt; D:          lr = minLr
 *   otherwise:       lr = minLr + (maxLr − minLr) · ½ (1 + cos(π (s − W) / (D − W)))
 * </pre>
 *
 * @param maxLr       peak learning rate, reached at {@code s = W}
 * @param minLr       final learning rate, 0 ≤ minLr ≤ maxLr
 * @param warmupSteps W ≥ 0
 * @param decaySteps  D &gt; W, the step at which minLr is reached (Megatron's {@code lr_decay_iters}, by default the
 *                    number of training steps)
 */
public record CosineSchedule(double maxLr, double minLr, long warmupSteps, long decaySteps) {

    public CosineSchedule {
        if (!(maxLr >= 0) || !Double.isFinite(maxLr)) {
            throw new IllegalArgumentException("maxLr must be a finite number >= 0, got " + maxLr);
        }
        if (!(minLr >= 0 && minLr <= maxLr)) {
            throw new IllegalArgumentException("minLr must be in [0, maxLr = " + maxLr + "], got " + minLr);
        }
        if (warmupSteps < 0) {
            throw new IllegalArgumentException("warmupSteps must be >= 0, got " + warmupSteps);
        }
        if (decaySteps <= warmupSteps) {
            throw new IllegalArgumentException("decaySteps must be > warmupSteps = " + warmupSteps + ", got " + decaySteps);
        }
    }

    /** The learning rate of the update made after {@code stepsTaken} earlier updates. */
    public double lr(long stepsTaken) {
        if (stepsTaken < 0) {
            throw new IllegalArgumentException("stepsTaken must be >= 0, got " + stepsTaken);
        }
        if (warmupSteps > 0 && stepsTaken <= warmupSteps) {
            return maxLr * stepsTaken / warmupSteps;
        }
        if (stepsTaken > decaySteps) {
            return minLr;
        }
        double decayRatio = (double) (stepsTaken - warmupSteps) / (decaySteps - warmupSteps);
        double coefficient = 0.5 * (Math.cos(Math.PI * decayRatio) + 1.0);
        return minLr + coefficient * (maxLr - minLr);
    }
}
