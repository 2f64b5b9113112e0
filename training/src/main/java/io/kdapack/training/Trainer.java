package io.kdapack.training;

import io.kdapack.config.CheckpointConfig;
import io.kdapack.config.KdapackConfig;
import io.kdapack.config.TrainConfig;
import io.kdapack.core.loss.LossMode;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parallel;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.optim.TrainingOptimizer;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.checkpoint.TrainingState;
import io.kdapack.training.parallel.ExchangeStats;
import io.kdapack.training.parallel.GradientExchange;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.data.gpt.DatasetSplit;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
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
 *
 * <p>Data parallel ({@code train.data_parallel = N}, docs/training.md): the step's M micro-batches form N contiguous
 * blocks of M/N; each block's gradient is accumulated from zero on its own and the block gradients are summed in block
 * order, {@code ((g_0 + g_1) + …) + g_{N−1}}. A trainer with the one-process {@link GradientExchange#single()} runs the
 * N blocks one after the other (an extra gradient buffer when N > 1); a trainer that is rank r of an N-rank
 * {@link GradientExchange} runs block r only, reads only its micro-batches, and gets the others' loss-token counts,
 * losses and gradients through the exchange, so both give the same bits.
 */
public final class Trainer implements AutoCloseable {
    /** Floats per task when a block's gradients fold into their running sum. */
    private static final int FOLD_BLOCK = 1 << 15;
    private final KdapackConfig config;
    private final LanguageModel model;
    private final List<Parameter> parameters;
    private final MicroBatchAssembler batches;
    /** The valid split when {@code train.eval_interval > 0}, else null. */
    private final Validation validation;
    private final CheckpointStore checkpoints;
    private final LossMode lossMode;
    private final ForkJoinPool pool;
    private final GradientExchange exchange;
    /** N = {@code train.data_parallel}. */
    private final int blocks;
    /** Micro-batches per block, M/N. */
    private final int perBlock;
    /** The blocks this process runs: {@code [firstBlock, firstBlock + localBlocks)}. */
    private final int firstBlock;
    private final int localBlocks;
    /** Σ of the finished blocks' gradients, per parameter, while a one-process trainer runs several blocks. */
    private float[][] blockSums;
    private TrainingOptimizer optimizer;
    private long stepsDone;
    private StepTiming lastTiming = StepTiming.NONE;
    /** Nanoseconds spent in the current step's all-gathers (waiting for the other ranks). */
    private long gatherNanos;
    /** {@link System#nanoTime()} when the current step began. */
    private long stepStart;

    private Trainer(KdapackConfig config, LanguageModel model, MicroBatchAssembler batches, Validation validation,
                    CheckpointStore checkpoints, int threads, GradientExchange exchange) {
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
        this.exchange = exchange;
        this.blocks = train.dataParallel();
        this.perBlock = train.microBatchesPerRank();
        this.firstBlock = exchange.ranks() == 1 ? 0 : exchange.rank();
        this.localBlocks = exchange.ranks() == 1 ? blocks : 1;
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
        return create(config, factory, corpora, checkpointDir, GradientExchange.single());
    }

    /**
     * A trainer at step 0 that is rank {@code exchange.rank()} of a data-parallel run of {@code exchange.ranks()} ranks
     * ({@code train.data_parallel} of them), or the whole run with {@link GradientExchange#single()}. Every rank
     * initialises the same weights from the seed.
     *
     * @throws IllegalArgumentException when the exchange's rank count is neither 1 nor {@code train.data_parallel}
     * @throws IOException              when a dataset cannot be opened
     */
    public static Trainer create(KdapackConfig config, ModelFactory factory, TrainingCorpora corpora, Path checkpointDir,
                                 GradientExchange exchange) throws IOException {
        TrainConfig train = config.train();
        if (exchange.ranks() != 1 && exchange.ranks() != train.dataParallel()) {
            throw new IllegalArgumentException("train.data_parallel = " + train.dataParallel() + " does not match the "
                    + "exchange's " + exchange.ranks() + " ranks: run the N blocks in one process or one on each of N ranks");
        }
        LanguageModel model = factory.create(config.model(), train);
        long samples = (long) train.steps() * train.globalBatchSize();
        MegatronSamples source = MegatronSamples.open(corpora, train.data(), DatasetSplit.TRAIN,
                train.seqLength(), train.seed(), samples);
        MicroBatchAssembler assembler = new MicroBatchAssembler(source, train.microBatchSize(), model.mtpDepth());
        Validation validation = train.validates() ? Validation.open(corpora, train, model.mtpDepth()) : null;
        int threads = train.threads() > 0 ? train.threads() : Runtime.getRuntime().availableProcessors();
        return new Trainer(config, model, assembler, validation, new CheckpointStore(checkpointDir), threads, exchange);
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

    /** The exchange this trainer is a rank of ({@link GradientExchange#single()} for a one-process run). */
    public GradientExchange exchange() {
        return exchange;
    }

    /** Where the time of the last step went and the gradient bytes it exchanged. */
    public StepTiming lastTiming() {
        return lastTiming;
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
     * The micro-batches of optimizer step {@code step} (1-based) that this trainer runs: global micro-batch indices
     * {@code [(step−1)·M, step·M)}, or for rank r of N only block r, {@code (step−1)·M + [r·M/N, (r+1)·M/N)}. Depends
     * on nothing but the configuration, the rank and {@code step}.
     */
    public List<MicroBatch> microBatches(long step) {
        if (step < 1 || step > totalSteps()) {
            throw new IllegalArgumentException("step " + step + " outside [1, " + totalSteps() + "]");
        }
        int m = config.train().numMicrobatches();
        int first = firstBlock * perBlock;
        int count = localBlocks * perBlock;
        List<MicroBatch> out = new ArrayList<>(count);
        for (int i = first; i < first + count; i++) {
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
        if (exchange.ranks() == 1) {
            return Optional.of(validation.run(stepsDone, this::evaluate));
        }
        // Rank r evaluates the r-th contiguous share of the evaluation's micro-batches; the reports are gathered back in
        // order and reduced as one process reduces them.
        int share = validation.microBatchesPerEvaluation() / exchange.ranks();
        int from = exchange.rank() * share;
        List<MicroBatchLoss> mine = validation.evaluate(stepsDone, from, from + share, this::evaluate);
        List<MicroBatchLoss> all = new ArrayList<>(validation.microBatchesPerEvaluation());
        for (long[] rank : exchange.allGather(LossCodec.encode(mine, model.mtpDepth() > 0))) {
            all.addAll(LossCodec.decode(rank, share, model.mtpDepth() > 0));
        }
        return Optional.of(validation.reduce(stepsDone, all));
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
        for (int i = 0; i < microBatches.size(); i++) {
            MicroBatch batch = microBatches.get(i);
            forwardBackward(accumulation, accumulation.first() + i, batch);
            tokens += batch.size();
            segments += batch.segmentCount();
        }
        if (exchange.ranks() > 1) {
            long[] totals = {0, 0};
            for (long[] rank : gather(new long[] {tokens, segments})) {
                totals[0] += rank[0];
                totals[1] += rank[1];
            }
            tokens = totals[0];
            segments = totals[1];
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
        gatherNanos = 0;
        stepStart = System.nanoTime();
        int local = localBlocks * perBlock;
        if (microBatches.size() != local) {
            throw new IllegalArgumentException("microBatches: step " + (stepsDone + 1) + " runs " + local
                    + " micro-batches here, got " + microBatches.size());
        }
        GradientAccumulation accumulation;
        if (exchange.ranks() == 1) {
            accumulation = GradientAccumulation.of(lossMode, microBatches, model.mtpDepth(),
                    config.model().mtp().lossFactor());
        } else {
            // The weights need every micro-batch's loss-token counts (the global token mean divides by their sum).
            long[] mine = new long[2 * local];
            for (int i = 0; i < local; i++) {
                mine[2 * i] = microBatches.get(i).lossTokens();
                mine[2 * i + 1] = microBatches.get(i).mtpLossTokens();
            }
            long[][] all = gather(mine);
            int m = config.train().numMicrobatches();
            long[] counts = new long[m];
            long[] mtpCounts = new long[m];
            for (int r = 0; r < all.length; r++) {
                for (int i = 0; i < perBlock; i++) {
                    counts[r * perBlock + i] = all[r][2 * i];
                    mtpCounts[r * perBlock + i] = all[r][2 * i + 1];
                }
            }
            int first = firstBlock * perBlock;
            accumulation = GradientAccumulation.ofCounts(lossMode, counts, mtpCounts, model.mtpDepth(),
                    config.model().mtp().lossFactor(), first, first + local);
        }
        inPool(() -> {
            parameters.forEach(Parameter::zeroGrad);
            return null;
        });
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
        if (localBlocks > 1 && (m + 1) % perBlock == 0) {
            foldBlock(m / perBlock);
        }
        return output;
    }

    /**
     * After block {@code block} of a one-process run with several blocks: the block's gradient (accumulated from zero
     * in the parameters' buffers) joins the sum of the blocks before it, {@code s ← s + g_block}, and the buffers start
     * from zero for the next block; after the last block the buffers get {@code s + g_last}. That is the order in which
     * N ranks' exchange adds the block gradients.
     */
    private void foldBlock(int block) {
        if (blockSums == null) {
            blockSums = new float[parameters.size()][];
            for (int p = 0; p < parameters.size(); p++) {
                blockSums[p] = new float[parameters.get(p).size()];
            }
        }
        // Element-wise, so in parallel blocks on the trainer's threads; each element's sum is the same.
        inPool(() -> {
            for (int p = 0; p < parameters.size(); p++) {
                float[] sum = blockSums[p];
                float[] g = parameters.get(p).grads();
                Parallel.forBlocks(g.length, FOLD_BLOCK, (from, to) -> {
                    if (block == 0) {
                        System.arraycopy(g, from, sum, from, to - from);
                    } else if (block < blocks - 1) {
                        for (int i = from; i < to; i++) {
                            sum[i] += g[i];
                        }
                    } else {
                        for (int i = from; i < to; i++) {
                            g[i] = sum[i] + g[i];
                        }
                    }
                    if (block < blocks - 1) {
                        Arrays.fill(g, from, to, 0f);
                    }
                });
            }
            return null;
        });
    }

    /**
     * The update that ends the step: {@link TrainingOptimizer#step} (clipping, schedule, AdamW, zeroed gradients).
     *
     * @throws IllegalStateException when micro-batches are missing or the gradient norm is not finite (the weights are
     *                               then left as they were before the step)
     */
    public TrainingOptimizer.StepStats finishStep(GradientAccumulation step) {
        requireUnfinished();
        if (!step.localComplete()) {
            throw new IllegalStateException("step " + (stepsDone + 1) + " has " + step.mainReports().size() + " of its "
                    + (step.end() - step.first()) + " micro-batches");
        }
        ExchangeStats exchanged = ExchangeStats.NONE;
        if (exchange.ranks() > 1) {
            boolean mtp = model.mtpDepth() > 0;
            List<MicroBatchLoss> mine = new ArrayList<>(step.end() - step.first());
            for (int m = step.first(); m < step.end(); m++) {
                mine.add(new MicroBatchLoss(step.mainReport(m), step.mtpReport(m)));
            }
            long[][] all = gather(LossCodec.encode(mine, mtp));
            for (int r = 0; r < all.length; r++) {
                if (r == exchange.rank()) {
                    continue;
                }
                List<MicroBatchLoss> theirs = LossCodec.decode(all[r], perBlock, mtp);
                for (int i = 0; i < perBlock; i++) {
                    step.addGathered(r * perBlock + i, theirs.get(i).main(), theirs.get(i).mtp());
                }
            }
            exchanged = exchange.sumGradients(parameters);
        }
        // In the pool, so the update's element-wise passes run on the trainer's threads.
        TrainingOptimizer.StepStats update = inPool(() -> optimizer.step(parameters));
        stepsDone++;
        long waited = gatherNanos + exchanged.waitNanos();
        lastTiming = new StepTiming(System.nanoTime() - stepStart - waited - exchanged.exchangeNanos(), waited,
                exchanged.exchangeNanos(), exchanged.bytesSent(), exchanged.bytesReceived());
        return update;
    }

    /** An all-gather of the exchange, its time counted as waiting for the other ranks. */
    private long[][] gather(long[] local) {
        long start = System.nanoTime();
        long[][] all = exchange.allGather(local);
        gatherNanos += System.nanoTime() - start;
        return all;
    }

    /** A forward pass only (no gradient), with the current weights, in the trainer's pool. */
    public LanguageModel.Output evaluate(MicroBatch batch) {
        return inPool(() -> model.run(batch, null));
    }

    /**
     * Writes a checkpoint of the current state (atomically; see {@link CheckpointStore}), then, with
     * {@code train.checkpoint.keep_last} = K > 0, deletes all but the newest K: only once the new one is complete and
     * synced to disk, so a crash at any point leaves at least the newest K − 1 older ones or the new one. Of a
     * data-parallel run only rank 0 writes (every rank holds the same state); the others' call does nothing and
     * returns the path rank 0 writes.
     */
    public Path saveCheckpoint() throws IOException {
        if (exchange.rank() != 0) {
            return checkpoints.root().resolve(CheckpointStore.directoryName(stepsDone));
        }
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
        if (exchange.ranks() > 1) {
            // Every rank restores the checkpoint rank 0 found, so all start from the same state.
            long[][] found = exchange.allGather(new long[] {latest.map(CheckpointStore::stepOf).orElse(-1L)});
            long step = found[0][0];
            latest = step < 0 ? Optional.empty() : Optional.of(checkpoints.root().resolve(CheckpointStore.directoryName(step)));
        }
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
                TrainConfig.defaults().backend(), t.isolation(), t.evalInterval(), t.evalIters(), t.dataParallel());
        return new KdapackConfig(config.model(), normalised, config.server()).fingerprint();
    }

    private void requireUnfinished() {
        if (finished()) {
            throw new IllegalStateException("the run is finished: " + stepsDone + " of " + totalSteps() + " steps done");
        }
    }

    private <T> T inPool(Callable<T> work) {
        try {
            return pool.invoke(ForkJoinTask.adapt(work));
        } catch (RuntimeException e) {
            // An exception thrown on a worker comes back as a new one of its type around the original, whose message
            // it prefixes with the class name: rethrow the original, so the caller sees the message as written.
            if (e.getCause() instanceof RuntimeException original && original.getClass() == e.getClass()) {
                throw original;
            }
            throw e;
        }
    }

    /** Stops the trainer's worker threads and closes its exchange. */
    @Override
    public void close() {
        pool.shutdown();
        exchange.close();
    }
}
