package io.kdapack.core.optim;

import io.kdapack.core.optim.OptimizerConfig;
import java.util.List;

/**
 * The optimizer step of a training run, in Megatron's order: global gradient-norm clipping, the learning rate of
 * the schedule for the number of updates already made, the AdamW update, then the gradients are zeroed for the
 * next global batch. Built from {@code train.optimizer} and {@code train.steps}. The element-wise passes run in
 * parallel in the fork-join pool of the calling task (or the common pool); see {@link ElementBlocks}.
 */
public final class TrainingOptimizer {
    private final OptimizerConfig config;
    private final CosineSchedule schedule;
    private final AdamW adam;

    /** What one step did, for metrics ({@code lr} and {@code grad_norm} of architecture §5). */
    public record StepStats(long step, double lr, double gradNorm) {
    }

    /**
     * @param config     the optimizer settings
     * @param totalSteps {@code train.steps}: the cosine decay ends there
     */
    public TrainingOptimizer(OptimizerConfig config, long totalSteps) {
        this(config, totalSteps, null);
    }

    private TrainingOptimizer(OptimizerConfig config, long totalSteps, AdamWState state) {
        this.config = config;
        this.schedule = new CosineSchedule(config.lr(), config.minLr(), config.warmupSteps(), totalSteps);
        AdamWOptions options = new AdamWOptions(config.beta1(), config.beta2(), config.eps(), config.weightDecay());
        this.adam = state == null ? new AdamW(options) : AdamW.restore(options, state);
    }

    /** Continues from a checkpoint's optimizer state. */
    public static TrainingOptimizer restore(OptimizerConfig config, long totalSteps, AdamWState state) {
        return new TrainingOptimizer(config, totalSteps, state);
    }

    /** Optimizer steps taken so far. */
    public long steps() {
        return adam.steps();
    }

    /** A copy of the AdamW state, for {@link io.kdapack.training.checkpoint.Checkpoint#of}. */
    public AdamWState state() {
        return adam.state();
    }

    /**
     * Clips, updates and zeroes the gradients of {@code parameters}. A non-finite gradient norm stops the run with an
     * exception before anything is updated, so the weights and the optimizer state stay as they were.
     */
    public StepStats step(List<? extends NamedParameter> parameters) {
        double gradNorm = GradientClipping.clipByGlobalNorm(parameters, config.clipGrad());
        if (!Double.isFinite(gradNorm)) {
            throw new IllegalStateException("gradient norm is " + gradNorm + " at step " + (adam.steps() + 1)
                    + "; the weights were not updated");
        }
        double lr = schedule.lr(adam.steps());
        adam.step(parameters, lr);
        ElementBlocks.zeroGradients(parameters);
        return new StepStats(adam.steps(), lr, gradNorm);
    }
}
