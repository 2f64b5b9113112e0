package io.kdapack.api.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.api.http.ApiException;
import io.kdapack.config.ConfigException;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;

/**
 * Test double of the training loop's job factory: jobs of {@code {"steps": N}} one-micro-batch steps whose
 * loss at step s is {@code 1/s} exactly; the loader waits for a permit of {@link #gate} before each
 * micro-batch when the config says {@code "gated": true} (the model then idles, free to evaluate). Checkpoints are remembered per job, so resume works.
 */
public final class ScriptedJobFactory implements JobFactory {

    static final int SEQ = 4;

    public final Semaphore gate = new Semaphore(0);
    public final Map<String, List<Long>> checkpoints = new ConcurrentHashMap<>();
    private final Map<String, JsonNode> configs = new ConcurrentHashMap<>();

    public static double lossAt(long step) {
        return 1.0 / step;
    }

    @Override
    public TrainingBackend create(String jobId, JsonNode config) {
        JsonNode steps = config.get("steps");
        if (steps == null || !steps.canConvertToInt() || steps.asInt() < 1) {
            throw new ConfigException("steps", steps, "expected an integer >= 1", "request body");
        }
        configs.put(jobId, config);
        return backend(jobId, config);
    }

    @Override
    public TrainingBackend resume(String jobId) {
        JsonNode config = configs.get(jobId);
        if (config == null) {
            throw ApiException.notFound("no job " + jobId + " on disk");
        }
        return backend(jobId, config);
    }

    @Override
    public List<String> unfinishedJobs() {
        return List.copyOf(configs.keySet());
    }

    private TrainingBackend backend(String jobId, JsonNode config) {
        TrainingPlan plan = new TrainingPlan(config.get("steps").asInt(), 1, config.path("checkpoint_every").asInt(1000));
        boolean gated = config.path("gated").asBoolean(false);
        List<Long> saved = checkpoints.computeIfAbsent(jobId, id -> new CopyOnWriteArrayList<>());
        return new TrainingBackend() {
            @Override
            public TrainingPlan plan() {
                return plan;
            }

            @Override
            public long resumeStep() {
                return saved.isEmpty() ? 0 : saved.getLast();
            }

            @Override
            public SampleSource samples() {
                return index -> {
                    if (gated) {
                        gate.acquire();
                    }
                    return new RawMicroBatch(index, 1, SEQ + 1, new int[] {(int) index, 1, 2, 3, 4},
                            new int[] {SEQ + 1});
                };
            }

            @Override
            public BatchSegmenter segmenter() {
                return raw -> new MicroBatch(1, SEQ, new int[] {raw.tokens()[0], 1, 2, 3}, new int[] {1, 2, 3, 4},
                        new float[] {1, 1, 1, 1}, new int[] {0, 1, 0, 1}, new int[] {1, 1, 2, 2}, null, null);
            }

            @Override
            public StepCompute createCompute() {
                return new StepCompute() {
                    @Override
                    public long restoreLatestCheckpoint() {
                        return saved.isEmpty() ? 0 : saved.getLast();
                    }

                    @Override
                    public List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) {
                        return microBatches.stream().map(batch -> new MicroBatchLoss(
                                new LossReport(lossAt(batch.tokens()[0] + 1L) * SEQ, SEQ), null)).toList();
                    }

                    @Override
                    public OptimizerUpdate optimizerStep(StepLoss accumulated) {
                        return new OptimizerUpdate(0.5, 1e-3);
                    }

                    @Override
                    public BatchLoss evaluate(MicroBatch batch) {
                        // One report per distinct segment id of the (single-row) batch: segment s has sum 2s, count 2.
                        List<LossReport> segments = new ArrayList<>();
                        int previous = 0;
                        for (int id : batch.segmentIds()) {
                            if (id != 0 && id != previous) {
                                segments.add(new LossReport(2.0 * (segments.size() + 1), 2));
                            }
                            previous = id;
                        }
                        return new BatchLoss(LossReport.total(segments), segments);
                    }

                    @Override
                    public void saveCheckpoint(long step) {
                        saved.add(step);
                    }

                    @Override
                    public void close() {
                    }
                };
            }
        };
    }
}
