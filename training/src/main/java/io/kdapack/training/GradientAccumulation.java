package io.kdapack.training;

import io.kdapack.core.loss.LossMode;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.loss.LossScaling;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.StepLoss;
import java.util.ArrayList;
import java.util.List;

/**
 * The loss side of one optimizer step over {@code M} micro-batches: the per-token weights each micro-batch's backward
 * pass gets ({@link LossScaling}, both Megatron accumulation modes, MTP scaled by {@code loss_factor / depth}), and the
 * loss sums and counts the passes report, added up in micro-batch order.
 *
 * <p>The weights depend on the loss masks alone, so they are known before any forward pass: in
 * {@link LossMode#PER_MICROBATCH_MEAN} each micro-batch's own count, in {@link LossMode#PER_TOKEN} the count of the
 * whole global batch.
 */
public final class GradientAccumulation {
    private final LossScaling scaling;
    private final long[] counts;
    private final long[] mtpCounts;
    private final int mtpDepth;
    private final double mtpLossFactor;
    private final List<LossReport> main = new ArrayList<>();
    private final List<LossReport> mtp = new ArrayList<>();

    private GradientAccumulation(LossScaling scaling, long[] counts, long[] mtpCounts, int mtpDepth,
                                 double mtpLossFactor) {
        this.scaling = scaling;
        this.counts = counts;
        this.mtpCounts = mtpCounts;
        this.mtpDepth = mtpDepth;
        this.mtpLossFactor = mtpLossFactor;
    }

    /**
     * @param batches       the step's M micro-batches, in order
     * @param mtpDepth      the model's MTP depth (0 = off)
     * @param mtpLossFactor Megatron's {@code mtp_loss_scaling_factor}
     */
    public static GradientAccumulation of(LossMode mode, List<MicroBatch> batches, int mtpDepth, double mtpLossFactor) {
        if (batches.isEmpty()) {
            throw new IllegalArgumentException("batches: a step needs at least one micro-batch, got 0");
        }
        long[] counts = batches.stream().mapToLong(MicroBatch::lossTokens).toArray();
        long[] mtpCounts = batches.stream().mapToLong(MicroBatch::mtpLossTokens).toArray();
        return new GradientAccumulation(LossScaling.of(mode, counts), counts, mtpCounts, mtpDepth, mtpLossFactor);
    }

    /** M. */
    public int microBatches() {
        return scaling.numMicroBatches();
    }

    /** The loss weights of micro-batch {@code m}'s backward pass. */
    public LanguageModel.LossWeights weights(int m) {
        double mtpWeight = mtpDepth > 0 ? scaling.mtpTokenWeight(m, mtpCounts[m], mtpLossFactor, mtpDepth) : 0;
        return new LanguageModel.LossWeights(scaling.tokenWeight(m), mtpWeight);
    }

    /**
     * Checks that {@code batch} has the loss tokens micro-batch {@code m}'s weights were fixed for (a batch that reached
     * the model through another path than the one the weights were computed from must be the same micro-batch).
     */
    public void requireMasks(int m, MicroBatch batch) {
        if (m < 0 || m >= counts.length) {
            throw new IllegalArgumentException("micro-batch " + m + " outside [0, " + counts.length + ")");
        }
        if (batch.lossTokens() != counts[m] || batch.mtpLossTokens() != mtpCounts[m]) {
            throw new IllegalArgumentException("micro-batch " + m + " has " + batch.lossTokens() + " (MTP "
                    + batch.mtpLossTokens() + ") loss tokens, its weights were fixed for " + counts[m] + " (MTP "
                    + mtpCounts[m] + ")");
        }
    }

    /** Records the output of micro-batch {@code m}; micro-batches must be added in order. */
    public void add(int m, LanguageModel.Output output) {
        if (m != main.size()) {
            throw new IllegalArgumentException("micro-batch " + m + " added out of order, expected " + main.size());
        }
        if (m >= scaling.numMicroBatches()) {
            throw new IllegalArgumentException("micro-batch " + m + " outside [0, " + scaling.numMicroBatches() + ")");
        }
        main.add(new LossReport(output.lossSum(), output.lossCount()));
        mtp.add(mtpDepth > 0 ? new LossReport(output.mtpLossSum(), output.mtpLossCount()) : LossReport.EMPTY);
    }

    /** Whether every micro-batch has been added. */
    public boolean complete() {
        return main.size() == scaling.numMicroBatches();
    }

    /**
     * The step's losses as logged: {@link StepLoss#reduce} over the micro-batches added, the reduction the actor
     * pipeline's loss stage applies too.
     */
    public StepLoss reduce(long step, long positions, long segments) {
        List<MicroBatchLoss> losses = new ArrayList<>(main.size());
        for (int m = 0; m < main.size(); m++) {
            losses.add(new MicroBatchLoss(main.get(m), mtpReport(m)));
        }
        return StepLoss.reduce(step, losses, positions, segments);
    }

    /** The main loss report of micro-batch {@code m}, once added. */
    public LossReport mainReport(int m) {
        return main.get(m);
    }

    /** The MTP loss report of micro-batch {@code m}, once added; null without MTP. */
    public LossReport mtpReport(int m) {
        return mtpDepth > 0 ? mtp.get(m) : null;
    }

    /** The main loss's reports, one per micro-batch added. */
    public List<LossReport> mainReports() {
        return List.copyOf(main);
    }
}
