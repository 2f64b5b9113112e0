package io.kdapack.actors.job;

import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.OptimizerUpdate;
import io.kdapack.training.pipeline.RawMicroBatch;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test double of the training loop: deterministic micro-batches whose losses follow a closed formula
 * ({@link #expectedStepLoss}), with hooks to fail a stage, hang the loader, or hold the model at a gate.
 *
 * <p>Micro-batch {@code i} is one row of {@link #SEQ} tokens; its loss mask has {@code 1 + i % 5} ones and
 * every counted token's loss is {@code 1 / (i + 1)}, so step losses depend on the Megatron reduction
 * ({@code Σ sums / Σ counts}, not the mean of micro-batch means).
 */
final class ScriptedTraining implements TrainingBackend {

    static final int SEQ = 8;

    enum Stage { LOADER, SEGMENTER, MODEL }

    private final TrainingPlan plan;
    private Stage failStage;
    private long failIndex = -1;
    private long hangLoaderAt = -1;
    final CountDownLatch releaseHang = new CountDownLatch(1);
    private Semaphore modelGate;
    private long restoreStep;
    private boolean mtp;

    final AtomicInteger loaded = new AtomicInteger();
    final AtomicInteger consumed = new AtomicInteger();
    final AtomicInteger maxAlive = new AtomicInteger();
    final Set<Thread> computeThreads = ConcurrentHashMap.newKeySet();
    final List<Long> checkpoints = new CopyOnWriteArrayList<>();
    final List<Long> firstIndexLoaded = new CopyOnWriteArrayList<>();
    /** Indices of micro-batches as the model starts them. */
    final BlockingQueue<Long> started = new LinkedBlockingQueue<>();
    volatile boolean computeClosed;
    /** Compute calls in order: "forward i", "optimizer s", "evaluate". */
    final List<String> calls = new CopyOnWriteArrayList<>();

    ScriptedTraining(long totalSteps, int microBatches, long checkpointEvery) {
        this.plan = new TrainingPlan(totalSteps, microBatches, checkpointEvery);
    }

    /** Micro-batch i reports an MTP loss of sum i+1 over count 1 + i % 3. */
    ScriptedTraining withMtp() {
        mtp = true;
        return this;
    }

    static LossReport mtpReport(long index) {
        return new LossReport(index + 1.0, 1 + index % 3);
    }

    ScriptedTraining failing(Stage stage, long index) {
        failStage = stage;
        failIndex = index;
        return this;
    }

    ScriptedTraining hangingLoaderAt(long index) {
        hangLoaderAt = index;
        return this;
    }

    /** The model waits for a permit before each micro-batch. */
    ScriptedTraining gated(Semaphore gate) {
        modelGate = gate;
        return this;
    }

    ScriptedTraining restoringStep(long step) {
        restoreStep = step;
        return this;
    }

    static double tokenLoss(long index) {
        return 1.0 / (index + 1);
    }

    static int maskCount(long index) {
        return 1 + (int) (index % 5);
    }

    /** The logged loss of a step: Σ sums / Σ counts over its micro-batches. */
    static double expectedStepLoss(long step, int microBatches) {
        double sum = 0;
        double count = 0;
        for (long i = (step - 1) * microBatches; i < step * microBatches; i++) {
            sum += tokenLoss(i) * maskCount(i);
            count += maskCount(i);
        }
        return sum / count;
    }

    static double expectedLr(long step) {
        return 1e-3 / step;
    }

    @Override
    public TrainingPlan plan() {
        return plan;
    }

    @Override
    public SampleSource samples() {
        return index -> {
            if (firstIndexLoaded.isEmpty()) {
                firstIndexLoaded.add(index);
            }
            failIf(Stage.LOADER, index);
            if (index == hangLoaderAt) {
                releaseHang.await();
            }
            int[] tokens = new int[SEQ + 1];
            for (int t = 0; t <= SEQ; t++) {
                tokens[t] = (int) (index * 10 + t);
            }
            int alive = loaded.incrementAndGet() - consumed.get();
            maxAlive.accumulateAndGet(alive, Math::max);
            return new RawMicroBatch(index, 1, SEQ + 1, tokens, new int[] {SEQ + 1});
        };
    }

    @Override
    public BatchSegmenter segmenter() {
        return raw -> {
            failIf(Stage.SEGMENTER, raw.index());
            int[] inputs = new int[SEQ];
            int[] labels = new int[SEQ];
            float[] mask = new float[SEQ];
            int[] positions = new int[SEQ];
            int[] segments = new int[SEQ];
            for (int t = 0; t < SEQ; t++) {
                inputs[t] = raw.tokens()[t];
                labels[t] = raw.tokens()[t + 1];
                mask[t] = t < maskCount(raw.index()) ? 1f : 0f;
                positions[t] = t % 4;
                segments[t] = 1 + t / 4;
            }
            // The index travels in the first token, so the compute double can recover the formula's input.
            return new MicroBatch(1, SEQ, inputs, labels, mask, positions, segments, null, null);
        };
    }

    @Override
    public StepCompute createCompute() {
        return new Compute();
    }

    private void failIf(Stage stage, long index) {
        if (stage == failStage && index == failIndex) {
            throw new IllegalStateException("scripted " + stage.name().toLowerCase() + " failure at micro-batch " + index);
        }
    }

    private final class Compute implements StepCompute {

        @Override
        public long restoreLatestCheckpoint() {
            computeThreads.add(Thread.currentThread());
            return restoreStep;
        }

        @Override
        public List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) throws Exception {
            List<MicroBatchLoss> losses = new ArrayList<>();
            for (MicroBatch batch : microBatches) {
                losses.add(forwardBackward(batch));
            }
            return losses;
        }

        private MicroBatchLoss forwardBackward(MicroBatch batch) throws Exception {
            computeThreads.add(Thread.currentThread());
            long index = batch.tokens()[0] / 10;
            started.add(index);
            if (modelGate != null) {
                modelGate.acquire();
            }
            consumed.incrementAndGet();
            calls.add("forward " + index);
            failIf(Stage.MODEL, index);
            long count = batch.lossTokens();
            return new MicroBatchLoss(new LossReport(tokenLoss(index) * count, count), mtp ? mtpReport(index) : null);
        }

        @Override
        public OptimizerUpdate optimizerStep(StepLoss accumulated) {
            computeThreads.add(Thread.currentThread());
            calls.add("optimizer " + accumulated.step());
            return new OptimizerUpdate(accumulated.main().sum(), expectedLr(accumulated.step()));
        }

        @Override
        public BatchLoss evaluate(MicroBatch batch) {
            computeThreads.add(Thread.currentThread());
            calls.add("evaluate");
            long count = batch.lossTokens();
            return new BatchLoss(new LossReport(2.0 * count, count), List.of(new LossReport(2.0 * count, count)));
        }

        @Override
        public void saveCheckpoint(long step) {
            computeThreads.add(Thread.currentThread());
            checkpoints.add(step);
        }

        @Override
        public void close() {
            computeClosed = true;
        }
    }
}
