package io.kdapack.training.pipeline;

import io.kdapack.actors.pipeline.BatchLoss;
import io.kdapack.actors.pipeline.MicroBatchLoss;
import io.kdapack.actors.pipeline.OptimizerUpdate;
import io.kdapack.actors.pipeline.StepCompute;
import io.kdapack.actors.pipeline.StepLoss;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.optim.TrainingOptimizer;
import io.kdapack.training.GradientAccumulation;
import io.kdapack.training.MicroBatchAssembler;
import io.kdapack.training.Trainer;
import java.util.ArrayList;
import java.util.List;

/**
 * The model stage of a job: a {@link Trainer} fed one micro-batch at a time ({@link Trainer#beginStep},
 * {@link Trainer#forwardBackward}, {@link Trainer#finishStep}, the calls {@link Trainer#train} makes).
 *
 * <p>The loss weights of a step depend on the loss masks of all its M micro-batches (in per-token mode, on their total
 * count), which the pipeline delivers one by one; so at the first micro-batch of a step the trainer reads the step's
 * masks from its own copy of the sample order ({@link Trainer#microBatches}), and every delivered micro-batch is
 * checked against them.
 */
final class TrainerCompute implements StepCompute {
    private final Trainer trainer;
    private GradientAccumulation step;
    private int next;

    TrainerCompute(Trainer trainer) {
        this.trainer = trainer;
    }

    @Override
    public long restoreLatestCheckpoint() throws Exception {
        return trainer.restoreLatest().orElse(0L);
    }

    @Override
    public MicroBatchLoss forwardBackward(MicroBatch batch) {
        if (step == null) {
            step = trainer.beginStep(trainer.microBatches(trainer.stepsDone() + 1));
            next = 0;
        }
        int m = next++;
        trainer.forwardBackward(step, m, batch);
        return new MicroBatchLoss(step.mainReport(m), step.mtpReport(m));
    }

    @Override
    public OptimizerUpdate optimizerStep(StepLoss accumulated) {
        if (step == null) {
            throw new IllegalStateException("optimizer step " + accumulated.step() + " without micro-batches");
        }
        if (accumulated.step() != trainer.stepsDone() + 1) {
            throw new IllegalStateException("optimizer step " + accumulated.step() + " arrived, the trainer is at step "
                    + (trainer.stepsDone() + 1));
        }
        GradientAccumulation done = step;
        step = null;
        TrainingOptimizer.StepStats update = trainer.finishStep(done);
        return new OptimizerUpdate(update.gradNorm(), update.lr());
    }

    /** The batch's loss under the current weights; without MTP targets they are rolled from its labels, as in training. */
    @Override
    public BatchLoss evaluate(MicroBatch request) {
        int mtpDepth = trainer.model().mtpDepth();
        MicroBatch batch = request.mtpLabels() != null || mtpDepth == 0 ? request
                : MicroBatchAssembler.of(request.rows(), request.length(), request.tokens(), request.labels(),
                        request.lossMask(), request.positionIds(), request.segmentIds(), mtpDepth);
        LanguageModel.Output output = trainer.evaluate(batch);
        return new BatchLoss(new LossReport(output.lossSum(), output.lossCount()), segmentLosses(batch, output));
    }

    @Override
    public void saveCheckpoint(long stepNumber) throws Exception {
        if (stepNumber != trainer.stepsDone()) {
            throw new IllegalStateException("checkpoint of step " + stepNumber + " asked, the trainer is at step "
                    + trainer.stepsDone());
        }
        trainer.saveCheckpoint();
    }

    @Override
    public void close() {
        trainer.close();
    }

    /** Per segment (runs of one non-zero segment id within a row, row-major): masked loss sum and count. */
    private static List<LossReport> segmentLosses(MicroBatch batch, LanguageModel.Output output) {
        List<LossReport> segments = new ArrayList<>();
        int[] ids = batch.segmentIds();
        float[] mask = batch.lossMask();
        double[] loss = output.perTokenLoss();
        for (int b = 0; b < batch.rows(); b++) {
            int previous = 0;
            double sum = 0;
            long count = 0;
            for (int i = b * batch.length(); i < (b + 1) * batch.length(); i++) {
                if (ids[i] != previous && previous != 0) {
                    segments.add(new LossReport(sum, count));
                }
                if (ids[i] != previous) {
                    sum = 0;
                    count = 0;
                }
                if (ids[i] != 0 && mask[i] == 1f) {
                    sum += loss[i];
                    count++;
                }
                previous = ids[i];
            }
            if (previous != 0) {
                segments.add(new LossReport(sum, count));
            }
        }
        return segments;
    }
}
