package io.kdapack.training.pipeline;

import io.kdapack.core.loss.LossMode;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.loss.LossScaling;
import java.util.ArrayList;
import java.util.List;

/**
 * The losses of one optimizer step, accumulated over its micro-batches.
 *
 * @param step         the optimizer step (1-based)
 * @param microBatches M, the micro-batches accumulated
 * @param main         Σ over micro-batches of the language-model loss sums and counts; the logged loss is
 *                     {@code main.mean()}
 * @param mtp          the same for the MTP loss, or null without an MTP head
 * @param mtpLoss      the logged MTP loss: the mean over micro-batches of each one's {@code mtp.mean()} (as
 *                     Megatron logs it, docs/training.md), or null without an MTP head
 * @param positions    B·T summed over the micro-batches
 * @param segments     segments (documents) summed over the micro-batches
 */
public record StepLoss(long step, int microBatches, LossReport main, LossReport mtp, Double mtpLoss, long positions,
                       long segments) {

    /**
     * Megatron's reduction of one optimizer step's losses, the one implementation that both the actor pipeline's loss
     * stage and the direct training loop use: main sums and counts added up in micro-batch order (the logged loss
     * {@code Σ sums / Σ counts}); the MTP reports added up likewise, and the logged MTP loss the mean over
     * micro-batches of {@code mtp_sum_m / max(mtp_count_m, 1)} (docs/training.md).
     *
     * @param microBatches the step's micro-batch losses in order; all with an MTP report or all without
     * @param positions    B·T summed over the micro-batches
     * @param segments     documents summed over the micro-batches
     */
    public static StepLoss reduce(long step, List<MicroBatchLoss> microBatches, long positions, long segments) {
        if (microBatches.isEmpty()) {
            throw new IllegalArgumentException("microBatches: a step needs at least one micro-batch, got 0");
        }
        boolean withMtp = microBatches.getFirst().mtp() != null;
        List<LossReport> main = new ArrayList<>(microBatches.size());
        List<LossReport> mtp = new ArrayList<>(microBatches.size());
        for (MicroBatchLoss loss : microBatches) {
            if ((loss.mtp() != null) != withMtp) {
                throw new IllegalArgumentException("micro-batches of step " + step
                        + " disagree on whether there is an MTP loss");
            }
            main.add(loss.main());
            if (withMtp) {
                mtp.add(loss.mtp());
            }
        }
        return new StepLoss(step, microBatches.size(), LossReport.total(main), withMtp ? LossReport.total(mtp) : null,
                withMtp ? LossScaling.objective(LossMode.PER_MICROBATCH_MEAN, mtp) : null, positions, segments);
    }

    /** The logged loss {@code Σ sums / Σ counts} (0 when the step has no loss tokens). */
    public double loss() {
        return main.mean();
    }
}
