package io.kdapack.training;

import io.kdapack.config.CheckpointConfig;
import io.kdapack.config.KdapackConfig;
import io.kdapack.config.TrainConfig;
import io.kdapack.core.loss.LossMode;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.optim.TrainingOptimizer;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.checkpoint.TrainingState;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.data.gpt.DatasetSplit;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;

/**
 * The training loop of architecture §4, one optimizer step at a time. A step reads the next {@code M} micro-batches of the
 * Megatron sample order, runs each forward and backward with the {@link GradientAccumulation} weights of the
 * configured accumulation mode (gradients add up in the fp32 parameter buffers, which are the master weights), then
 * {@link TrainingOptimizer} clips the global gradient norm and updates with AdamW at the warmup + cosine learning rate
 * (docs/training.md).
 *
 * <p>Determinism: the model runs in a fork-join pool of {@code train.threads} workers and its layers write disjoint
 * outputs and reduce in a fixed order; micro-batches run one after the other in index order; the norm, the clip and
 * AdamW go through the parameters in list order. Same configuration and seed → bit-identical losses and weights,
 * whatever the thread count.
 *
 * <p>Each stage can be driven on its own (for an actor pipeline): {@link #microBatches(long)} (loading, a pure function
 * of the step), {@link #train(List)} (compute and update), {@link #saveCheckpoint()} between steps. {@link #step()} does
 * the first two. Not thread safe: one caller at a time.
 */
public final class Trainer implements AutoCloseable {
    private final KdapackConfig config;
    private final LanguageModel model;
    private final List<Parameter> parameters;
    private final MicroBatchAssembler batches;
    /** The valid split when {@code train.eval_interval > 0}, else null. */
    private final Validation validation;
    private final CheckpointStore checkpoints;
    private final LossMode lossMode;
    private final ForkJoinPool pool;
    private TrainingOptimizer optimizer;
    private long stepsDone;

    private Trainer(KdapackConfig config, LanguageModel model, MicroBatchAssembler batches, Validation validation,
                    CheckpointStore checkpoints, int threads) {
        TrainConfig train = config.train();
        this.config = config;
        this.model = model;
        this.parameters = List.copyOf(model.parameters());
        this.batches = batches;
        this.validation = validation;
        this.checkpoints = checkpoints;
        this.lossMode = LossMode.of(train.calculatePerTokenLoss());
        this.optimizer = new TrainingOptimizer(train.optimizer(), train.steps());
        this.pool = new ForkJoinPool(threads);
    }

    /**
     * A trainer at step 0 with freshly initialised weights.
     *
     * @param datasetPrefix  the {@code .bin/.idx} prefix to train on (already resolved; see {@link DatasetPaths})
     * @param checkpointDir  where checkpoints are written and resumed from
     * @throws IOException when the dataset cannot be opened
     */
    public static Trainer create(KdapackConfig config, ModelFactory factory, Path datasetPrefix, Path checkpointDir)
            throws IOException {
        return create(config, factory, TrainingCorpora.single(datasetPrefix), checkpointDir);
    }

    /**
     * A trainer at step 0 on {@code corpora} (one prefix or a weighted blend), with the valid split opened when
     * {@code train.eval_interval > 0}.
     *
     * @throws IOException when a dataset cannot be opened
     */
    public static Trainer create(KdapackConfig config, ModelFactory factory, TrainingCorpora corpora, Path checkpointDir)
            throws IOException {
        TrainConfig train = config.train();
        LanguageModel model = factory.create(config.model(), train);
        long samples = (long) train.steps() * train.globalBatchSize();
        MegatronSamples source = MegatronSamples.open(corpora, train.data(), DatasetSplit.TRAIN,
                train.seqLength(), train.seed(), samples);
        MicroBatchAssembler assembler = new MicroBatchAssembler(source, train.microBatchSize(), model.mtpDepth());
        Validation validation = train.validates() ? Validation.open(corpora, train, model.mtpDepth()) : null;
        int threads = train.threads() > 0 ? train.threads() : Runtime.getRuntime().availableProcessors();
        return new Trainer(config, model, assembler, validation, new CheckpointStore(checkpointDir), threads);
    }

    public KdapackConfig config() {
        return config;
    }

    public LanguageModel model() {
        return model;
    }

    public CheckpointStore checkpoints() {
        return checkpoints;
    }

    /** Optimizer steps completed. */
    public long stepsDone() {
        return stepsDone;
    }

    /** {@code train.steps}. */
    public long totalSteps() {
        return config.train().steps();
    }

    public boolean finished() {
        return stepsDone >= totalSteps();
    }

    /** Dataset samples consumed: {@code steps done · global batch size} (Megatron's {@code consumed_train_samples}). */
    public long consumedSamples() {
        return stepsDone * config.train().globalBatchSize();
    }

    /** Whether a checkpoint is due now: every {@code train.checkpoint.interval} steps and after the last step. */
    public boolean checkpointDue() {
        int interval = config.train().checkpoint().interval();
        return stepsDone > 0 && (finished() || interval > 0 && stepsDone % interval == 0);
    }

    /**
     * The micro-batches of optimizer step {@code step} (1-based): global micro-batch indices
     * {@code [(step−1)·M, step·M)}. Depends on nothing but the configuration and {@code step}.
     */
    public List<MicroBatch> microBatches(long step) {
        if (step < 1 || step > totalSteps()) {
            throw new IllegalArgumentException("step " + step + " outside [1, " + totalSteps() + "]");
        }
        int m = config.train().numMicrobatches();
        List<MicroBatch> out = new ArrayList<>(m);
        for (int i = 0; i < m; i++) {
            out.add(batches.microBatch((step - 1) * m + i));
        }
        return out;
    }

    /** Loads and trains the next step, then validates when an evaluation is due ({@link #validateIfDue()}). */
    public StepResult step() {
        requireUnfinished();
        StepResult result = train(microBatches(stepsDone + 1));
        return validateIfDue().map(result::withValidation).orElse(result);
    }

    /**
     * Megatron's evaluation on the valid split when one follows the step just completed ({@link Validation}): after
     * every multiple of {@code train.eval_interval} and after the last step; empty otherwise or without validation.
     */
    public Optional<ValidationResult> validateIfDue() {
        if (validation == null || !validation.due(stepsDone)) {
            return Optional.empty();
        }
        return Optional.of(validation.run(stepsDone, this::evaluate));
    }

    /**
     * One optimizer step on {@code microBatches} (those of {@link #microBatches(long)} for {@code stepsDone + 1} to
     * follow the Megatron order).
     *
     * @throws IllegalStateException when the run is finished or the gradient norm is not finite (the weights are then
     *                               left as they were before the step)
     */
    public StepResult train(List<MicroBatch> microBatches) {
        long start = System.nanoTime();
        GradientAccumulation accumulation = beginStep(microBatches);
        long tokens = 0;
        long segments = 0;
        for (int m = 0; m < microBatches.size(); m++) {
            MicroBatch batch = microBatches.get(m);
            forwardBackward(accumulation, m, batch);
            tokens += batch.size();
            segments += batch.segmentCount();
        }
        TrainingOptimizer.StepStats update = finishStep(accumulation);
        double seconds = Math.max((System.nanoTime() - start) / 1e9, 1e-9);
        StepLoss losses = accumulation.reduce(stepsDone, tokens, segments);
        return new StepResult(stepsDone, losses.loss(), losses.mtpLoss(), tokens, segments, update.gradNorm(),
                update.lr(), tokens / seconds);
    }

    /**
     * Starts optimizer step {@code stepsDone + 1}: zeroes the gradients and fixes the loss weights of its micro-batches.
     * {@link #train} is this, {@link #forwardBackward} for each micro-batch in order, then {@link #finishStep}; a
     * pipeline that receives the micro-batches one at a time calls the three itself.
     *
     * @param microBatches the step's M micro-batches; only their loss masks are read (the weights depend on them alone)
     * @throws IllegalStateException when the run is finished
     */
    public GradientAccumulation beginStep(List<MicroBatch> microBatches) {
        requireUnfinished();
        GradientAccumulation accumulation = GradientAccumulation.of(lossMode, microBatches, model.mtpDepth(),
                config.model().mtp().lossFactor());
        parameters.forEach(Parameter::zeroGrad);
        return accumulation;
    }

    /**
     * Forward and backward of micro-batch {@code m} of the step begun with {@code step}, with its loss weights;
     * gradients add up in the parameters, the losses in {@code step}.
     *
     * @throws IllegalArgumentException when {@code m} is out of order or {@code batch}'s loss tokens are not those the
     *                                  weights were fixed for
     */
    public LanguageModel.Output forwardBackward(GradientAccumulation step, int m, MicroBatch batch) {
        requireUnfinished();
        step.requireMasks(m, batch);
        LanguageModel.LossWeights weights = step.weights(m);
        LanguageModel.Output output = inPool(() -> model.run(batch, weights));
        step.add(m, output);
        return output;
    }

    /**
     * The update that ends the step: {@link TrainingOptimizer#step} (clipping, schedule, AdamW, zeroed gradients).
     *
     * @throws IllegalStateException when micro-batches are missing or the gradient norm is not finite (the weights are
     *                               then left as they were before the step)
     */
    public TrainingOptimizer.StepStats finishStep(GradientAccumulation step) {
        requireUnfinished();
        if (!step.complete()) {
            throw new IllegalStateException("step " + (stepsDone + 1) + " has " + step.mainReports().size() + " of its "
                    + step.microBatches() + " micro-batches");
        }
        TrainingOptimizer.StepStats update = optimizer.step(parameters);
        stepsDone++;
        return update;
    }

    /** A forward pass only (no gradient), with the current weights, in the trainer's pool. */
    public LanguageModel.Output evaluate(MicroBatch batch) {
        return inPool(() -> model.run(batch, null));
    }

    /**
     * Writes a checkpoint of the current state (atomically; see {@link CheckpointStore}), then, with
     * {@code train.checkpoint.keep_last} = K > 0, deletes all but the newest K: only once the new one is complete and
     * synced to disk, so a crash at any point leaves at least the newest K − 1 older ones or the new one.
     */
    public Path saveCheckpoint() throws IOException {
        TrainingState state = new TrainingState(stepsDone, consumedSamples(), resumeFingerprint(config), Map.of());
        Path saved = checkpoints.save(Checkpoint.of(state, parameters, optimizer.state()));
        int keepLast = config.train().checkpoint().keepLast();
        if (keepLast > 0) {
            checkpoints.prune(keepLast);
        }
        return saved;
    }

    /**
     * Continues from the newest complete checkpoint, if there is one: weights, AdamW moments and step count, data
     * position. The run draws no random numbers after initialisation (the sample order is a function of the seed),
     * so there is no generator state to restore.
     *
     * @return the step restored, or empty when there is no checkpoint (the trainer stays at step 0)
     * @throws IOException when the checkpoint is unreadable, or was written by a different configuration
     */
    public Optional<Long> restoreLatest() throws IOException {
        Optional<Path> latest = checkpoints.latest();
        if (latest.isEmpty()) {
            return Optional.empty();
        }
        Checkpoint checkpoint = CheckpointStore.load(latest.get());
        TrainingState state = checkpoint.state();
        String expected = resumeFingerprint(config);
        if (!expected.equals(state.configHash())) {
            throw new IOException(latest.get() + ": written by a different configuration (config hash "
                    + state.configHash() + ", this run " + expected + "); resume with the configuration of that run");
        }
        if (state.step() > totalSteps()
                || state.consumedSamples() != state.step() * config.train().globalBatchSize()) {
            throw new IOException(latest.get() + ": step " + state.step() + " with " + state.consumedSamples()
                    + " consumed samples does not fit a run of " + totalSteps() + " steps of "
                    + config.train().globalBatchSize() + " samples");
        }
        try {
            checkpoint.restoreInto(parameters);
        } catch (IllegalArgumentException e) {
            throw new IOException(latest.get() + ": " + e.getMessage(), e);
        }
        optimizer = TrainingOptimizer.restore(config.train().optimizer(), totalSteps(), checkpoint.optimizer());
        stepsDone = state.step();
        return Optional.of(stepsDone);
    }

    /**
     * The fingerprint a checkpoint records: the configuration with the settings that cannot change results
     * (threads, backend, checkpoint placement) normalised, so a run may resume with another thread count.
     */
    static String resumeFingerprint(KdapackConfig config) {
        TrainConfig t = config.train();
        TrainConfig normalised = new TrainConfig(t.seed(), t.steps(), t.microBatchSize(), t.numMicrobatches(),
                t.seqLength(), t.calculatePerTokenLoss(), t.optimizer(), t.data(), CheckpointConfig.defaults(), 0,
                TrainConfig.defaults().backend(), t.isolation(), t.evalInterval(), t.evalIters());
        return new KdapackConfig(config.model(), normalised, config.server()).fingerprint();
    }

    private void requireUnfinished() {
        if (finished()) {
            throw new IllegalStateException("the run is finished: " + stepsDone + " of " + totalSteps() + " steps done");
        }
    }

    private <T> T inPool(Callable<T> work) {
        return pool.invoke(ForkJoinTask.adapt(work));
    }

    /** Stops the trainer's worker threads. */
    @Override
    public void close() {
        pool.shutdown();
    }
}
