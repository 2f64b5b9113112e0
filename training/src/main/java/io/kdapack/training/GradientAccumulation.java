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
 *
 * <p>A data-parallel rank runs a contiguous range of the step's micro-batches ({@link #ofCounts}); the loss reports of
 * the others are gathered in ({@link #addGathered}) so that {@link #reduce} adds all M up in micro-batch order, as one
 * machine does.
 */
public final class GradientAccumulation {
    private final LossScaling scaling;
    private final long[] counts;
    private final long[] mtpCounts;
    private final int mtpDepth;
    private final double mtpLossFactor;
    /** First micro-batch this process runs (the others' reports arrive through {@link #addGathered}). */
    private final int first;
    /** One past the last micro-batch this process runs. */
    private final int end;
    /** Per micro-batch of the step, null until added. */
    private final LossReport[] main;
    private final LossReport[] mtp;
    /** Micro-batches of {@code [first, end)} added so far. */
    private int added;

    private GradientAccumulation(LossScaling scaling, long[] counts, long[] mtpCounts, int mtpDepth,
                                 double mtpLossFactor, int first, int end) {
        this.scaling = scaling;
        this.counts = counts;
        this.mtpCounts = mtpCounts;
        this.mtpDepth = mtpDepth;
        this.mtpLossFactor = mtpLossFactor;
        this.first = first;
        this.end = end;
        this.main = new LossReport[counts.length];
        this.mtp = new LossReport[counts.length];
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
        return new GradientAccumulation(LossScaling.of(mode, counts), counts, mtpCounts, mtpDepth, mtpLossFactor, 0,
                counts.length);
    }

    /**
     * The step of a data-parallel rank that runs micro-batches {@code [first, end)} of the step's M: the weights need
     * the loss-token counts of all M (in {@link LossMode#PER_TOKEN} every weight divides by {@code Σ_m count_m}), which
     * the ranks exchange before their forward passes; the other ranks' loss reports arrive through
     * {@link #addGathered} after them.
     *
     * @param counts    {@code [M]} loss tokens of each micro-batch of the step, in order
     * @param mtpCounts {@code [M]} the same for the rolled MTP mask
     */
    public static GradientAccumulation ofCounts(LossMode mode, long[] counts, long[] mtpCounts, int mtpDepth,
                                                double mtpLossFactor, int first, int end) {
        if (counts.length == 0 || counts.length != mtpCounts.length) {
            throw new IllegalArgumentException("counts: a step needs at least one micro-batch and one MTP count per "
                    + "micro-batch, got " + counts.length + " and " + mtpCounts.length);
        }
        if (first < 0 || end <= first || end > counts.length) {
            throw new IllegalArgumentException("micro-batches [" + first + ", " + end + ") outside the step's "
                    + counts.length);
        }
        return new GradientAccumulation(LossScaling.of(mode, counts), counts.clone(), mtpCounts.clone(), mtpDepth,
                mtpLossFactor, first, end);
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

    /** First micro-batch this process runs (0 unless it is one data-parallel rank of several). */
    public int first() {
        return first;
    }

    /** One past the last micro-batch this process runs ({@code M} unless it is one rank of several). */
    public int end() {
        return end;
    }

    /** Records the output of micro-batch {@code m}; the micro-batches of {@code [first, end)} are added in order. */
    public void add(int m, LanguageModel.Output output) {
        if (m != first + added) {
            throw new IllegalArgumentException("micro-batch " + m + " added out of order, expected " + (first + added));
        }
        if (m >= end) {
            throw new IllegalArgumentException("micro-batch " + m + " outside [" + first + ", " + end + ")");
        }
        main[m] = new LossReport(output.lossSum(), output.lossCount());
        mtp[m] = mtpDepth > 0 ? new LossReport(output.mtpLossSum(), output.mtpLossCount()) : LossReport.EMPTY;
        added++;
    }

    /**
     * Records the loss reports of micro-batch {@code m}, which another data-parallel rank ran.
     *
     * @param mtpReport null without MTP
     * @throws IllegalArgumentException when {@code m} is one this process runs, or was recorded already
     */
    public void addGathered(int m, LossReport mainReport, LossReport mtpReport) {
        if (m < 0 || m >= main.length || m >= first && m < end || main[m] != null) {
            throw new IllegalArgumentException("micro-batch " + m + " is not another rank's unrecorded micro-batch");
        }
        if ((mtpReport != null) != (mtpDepth > 0)) {
            throw new IllegalArgumentException("micro-batch " + m + ": an MTP report " + (mtpDepth > 0 ? "is needed"
                    : "was given without MTP"));
        }
        main[m] = mainReport;
        mtp[m] = mtpDepth > 0 ? mtpReport : LossReport.EMPTY;
    }

    /** Whether the micro-batches this process runs have all been added. */
    public boolean localComplete() {
        return added == end - first;
    }

    /** Whether every micro-batch of the step has been recorded (run here or gathered). */
    public boolean complete() {
        for (LossReport report : main) {
            if (report == null) {
                return false;
            }
        }
        return true;
    }

    /**
     * The step's losses as logged: {@link StepLoss#reduce} over the micro-batches recorded (added here or gathered), in micro-batch order, the reduction the actor
     * pipeline's loss stage applies too.
     */
    public StepLoss reduce(long step, long positions, long segments) {
        List<MicroBatchLoss> losses = new ArrayList<>(main.length);
        for (int m = 0; m < main.length; m++) {
            if (main[m] != null) {
                losses.add(new MicroBatchLoss(main[m], mtpReport(m)));
            }
        }
        return StepLoss.reduce(step, losses, positions, segments);
    }

    /** The main loss report of micro-batch {@code m}, once added. */
    public LossReport mainReport(int m) {
        return main[m];
    }

    /** The MTP loss report of micro-batch {@code m}, once added; null without MTP. */
    public LossReport mtpReport(int m) {
        return mtpDepth > 0 ? mtp[m] : null;
    }

    /** The main loss's reports recorded so far, in micro-batch order. */
    public List<LossReport> mainReports() {
        List<LossReport> out = new ArrayList<>();
        for (LossReport report : main) {
            if (report != null) {
                out.add(report);
            }
        }
        return out;
    }
}
