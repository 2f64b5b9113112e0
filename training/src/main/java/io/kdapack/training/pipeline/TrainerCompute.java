package io.kdapack.training.pipeline;

import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.optim.TrainingOptimizer;
import io.kdapack.training.GradientAccumulation;
import io.kdapack.training.MicroBatchAssembler;
import io.kdapack.training.Trainer;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.OptimizerUpdate;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.ValidationResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The model stage of a job: a {@link Trainer} driven through the calls {@link Trainer#train} makes
 * ({@link Trainer#beginStep} with the step's micro-batches, {@link Trainer#forwardBackward} for each,
 * {@link Trainer#finishStep}), on the micro-batches the pipeline's loader and segmenter assembled.
 */
final class TrainerCompute implements StepCompute {
    private final Trainer trainer;
    /** The step whose micro-batches have run, until its optimizer step. */
    private GradientAccumulation step;

    TrainerCompute(Trainer trainer) {
        this.trainer = trainer;
    }

    @Override
    public long restoreLatestCheckpoint() throws Exception {
        return trainer.restoreLatest().orElse(0L);
    }

    @Override
    public List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) {
        if (step != null) {
            throw new IllegalStateException("step " + (trainer.stepsDone() + 1) + " ran its micro-batches already and "
                    + "waits for its optimizer step");
        }
        step = trainer.beginStep(microBatches);
        List<MicroBatchLoss> losses = new ArrayList<>(microBatches.size());
        for (int m = 0; m < microBatches.size(); m++) {
            trainer.forwardBackward(step, m, microBatches.get(m));
            losses.add(new MicroBatchLoss(step.mainReport(m), step.mtpReport(m)));
        }
        return losses;
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
        // The evaluation Megatron runs after the step, on the model stage's thread like every forward pass.
        Optional<ValidationResult> validation = trainer.validateIfDue();
        return new OptimizerUpdate(update.gradNorm(), update.lr(), validation.map(ValidationResult::loss).orElse(null),
                validation.map(ValidationResult::mtpLoss).orElse(null));
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
    public WeightSnapshot snapshotWeights(long stepNumber) {
        if (stepNumber != trainer.stepsDone()) {
            throw new IllegalStateException("weights of step " + stepNumber + " asked, the trainer is at step "
                    + trainer.stepsDone());
        }
        return WeightSnapshot.of(stepNumber, trainer.config(), trainer.model().parameters());
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
