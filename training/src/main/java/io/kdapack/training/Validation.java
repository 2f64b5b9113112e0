package io.kdapack.training;

import io.kdapack.config.TrainConfig;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.core.loss.LossReport;
import io.kdapack.training.pipeline.MicroBatchLoss;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Megatron's validation during pre-training ({@code megatron/training/training.py}): after every step that is a multiple
 * of {@code eval_interval}, and after the last step, {@code evaluate} runs {@code eval_iters} global batches of the valid
 * split forward only (each {@code M} micro-batches of {@code B} samples, as in training) and reports
 * {@code Σ loss sums / Σ loss tokens} over all of them.
 *
 * <p>The valid split is one Megatron dataset ({@link MegatronSamples}, part {@code valid}) sized as
 * {@code get_train_valid_test_num_samples} sizes it, {@link TrainConfig#validSamples()}, and read by one iterator that
 * continues from evaluation to evaluation: evaluation {@code e} (0-based) reads valid samples
 * {@code [e·eval_iters·GB, (e+1)·eval_iters·GB)}. Evaluation {@code e} runs after step {@code (e+1)·eval_interval};
 * the one after the last step {@code N} is number {@code ceil(N / eval_interval) − 1}. So the window is a function of
 * the step alone and a resumed run reads exactly the windows the uninterrupted run reads (Megatron keeps
 * {@code consumed_valid_samples} in its checkpoint for the same purpose).
 *
 * <p>One difference, documented in docs/training.md: when the last step is itself a multiple of {@code eval_interval},
 * Megatron evaluates twice there (in the loop, then once more after it, on the next window); kdapack reports the
 * evaluation in the loop only. The sizing still counts Megatron's extra window, so the valid split's samples, epochs
 * and shuffle are Megatron's.
 */
public final class Validation {
    private final MicroBatchAssembler batches;
    private final int evalInterval;
    private final int evalIters;
    private final int microBatchesPerIteration;
    private final long totalSteps;
    private final int globalBatch;

    private Validation(MicroBatchAssembler batches, TrainConfig train) {
        this.batches = batches;
        this.evalInterval = train.evalInterval();
        this.evalIters = train.evalIters();
        this.microBatchesPerIteration = train.numMicrobatches();
        this.totalSteps = train.steps();
        this.globalBatch = train.globalBatchSize();
    }

    /**
     * The valid split of {@code corpora} for {@code train} (which must validate, {@link TrainConfig#validates()}).
     *
     * @throws IllegalArgumentException when the split has no valid part or a corpus has no valid documents
     */
    public static Validation open(TrainingCorpora corpora, TrainConfig train, int mtpDepth) throws IOException {
        if (!train.validates()) {
            throw new IllegalArgumentException("train.eval_interval is 0: the run does not validate");
        }
        MegatronSamples valid;
        try {
            valid = MegatronSamples.open(corpora, train.data(), DatasetSplit.VALID,
                    train.seqLength(), train.seed(), train.validSamples());
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new IllegalArgumentException("train.eval_interval = " + train.evalInterval() + " needs the valid split "
                    + "of " + corpora + ": " + e.getMessage(), e);
        }
        return new Validation(new MicroBatchAssembler(valid, train.microBatchSize(), mtpDepth), train);
    }

    /** Whether an evaluation follows step {@code step}: a multiple of {@code eval_interval}, or the last step. */
    public boolean due(long step) {
        return step > 0 && (step % evalInterval == 0 || step == totalSteps);
    }

    /** The 0-based number of the evaluation after step {@code step} ({@link #due}): {@code ceil(step / interval) − 1}. */
    public long evaluationIndex(long step) {
        if (!due(step)) {
            throw new IllegalArgumentException("no evaluation after step " + step + " (eval_interval " + evalInterval
                    + ", " + totalSteps + " steps)");
        }
        return (step + evalInterval - 1) / evalInterval - 1;
    }

    /**
     * The micro-batches evaluation {@code evaluationIndex(step)} reads, in Megatron's order: valid micro-batches
     * {@code [e·eval_iters·M, (e+1)·eval_iters·M)}.
     */
    public MicroBatch microBatch(long step, int i) {
        int perEvaluation = evalIters * microBatchesPerIteration;
        if (i < 0 || i >= perEvaluation) {
            throw new IllegalArgumentException("micro-batch " + i + " outside the " + perEvaluation + " of an evaluation");
        }
        return batches.microBatch(evaluationIndex(step) * perEvaluation + i);
    }

    /** Micro-batches per evaluation: {@code eval_iters · M}. */
    public int microBatchesPerEvaluation() {
        return evalIters * microBatchesPerIteration;
    }

    /**
     * Runs the evaluation after step {@code step} with {@code forward} (a forward pass without gradient, e.g.
     * {@link Trainer#evaluate}); the sums are added in micro-batch order, in double precision.
     */
    public ValidationResult run(long step, Function<MicroBatch, LanguageModel.Output> forward) {
        return reduce(step, evaluate(step, 0, microBatchesPerEvaluation(), forward));
    }

    /**
     * The forward passes of micro-batches {@code [from, to)} of the evaluation after step {@code step} (a data-parallel
     * rank's contiguous share; {@link #run} is all of them): each one's loss report, and its MTP report (null without
     * MTP).
     */
    public List<MicroBatchLoss> evaluate(long step, int from, int to,
                                         Function<MicroBatch, LanguageModel.Output> forward) {
        if (from < 0 || to < from || to > microBatchesPerEvaluation()) {
            throw new IllegalArgumentException("micro-batches [" + from + ", " + to + ") outside the "
                    + microBatchesPerEvaluation() + " of an evaluation");
        }
        List<MicroBatchLoss> out = new ArrayList<>(to - from);
        for (int i = from; i < to; i++) {
            LanguageModel.Output output = forward.apply(microBatch(step, i));
            out.add(new MicroBatchLoss(new LossReport(output.lossSum(), output.lossCount()),
                    output.mtpPerTokenLoss() == null ? null : new LossReport(output.mtpLossSum(), output.mtpLossCount())));
        }
        return out;
    }

    /**
     * Megatron's reduction of an evaluation: {@code Σ sums / Σ counts} over all its micro-batches, the sums added in
     * micro-batch order in double precision, starting from 0 (so any split of the passes among ranks, gathered back in
     * order, gives the same bits).
     *
     * @param microBatches the losses of all {@link #microBatchesPerEvaluation()} micro-batches, in order
     */
    public ValidationResult reduce(long step, List<MicroBatchLoss> microBatches) {
        if (microBatches.size() != microBatchesPerEvaluation()) {
            throw new IllegalArgumentException("an evaluation has " + microBatchesPerEvaluation() + " micro-batches, got "
                    + microBatches.size());
        }
        long evaluation = evaluationIndex(step);
        double sum = 0;
        long count = 0;
        double mtpSum = 0;
        long mtpCount = 0;
        boolean mtp = false;
        for (MicroBatchLoss loss : microBatches) {
            sum += loss.main().sum();
            count += loss.main().count();
            if (loss.mtp() != null) {
                mtp = true;
                mtpSum += loss.mtp().sum();
                mtpCount += loss.mtp().count();
            }
        }
        long samples = (long) evalIters * globalBatch;
        return new ValidationResult(step, evaluation, evaluation * samples, samples, count == 0 ? 0 : sum / count, count,
                mtp ? (mtpCount == 0 ? 0.0 : mtpSum / mtpCount) : null);
    }
}
