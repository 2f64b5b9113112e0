package io.kdapack.core.optim;

/**
 * AdamW, its warmup + cosine schedule and gradient clipping ({@code train.optimizer}).
 *
 * @param lr          peak learning rate
 * @param minLr       learning rate at the end of the cosine decay
 * @param warmupSteps linear warmup from 0, in optimizer steps (fewer than {@code train.steps})
 * @param weightDecay decoupled weight decay (not applied to norms, biases, A_log, dt_bias)
 * @param beta1       Adam β1
 * @param beta2       Adam β2
 * @param eps         Adam ε
 * @param clipGrad    global gradient-norm clip; 0 disables clipping
 */
public record OptimizerConfig(double lr, double minLr, int warmupSteps, double weightDecay, double beta1, double beta2,
                              double eps, double clipGrad) {

    public static OptimizerConfig defaults() {
        return new OptimizerConfig(5e-3, 1e-3, 10, 0.1, 0.9, 0.95, 1e-8, 1.0);
    }
}
