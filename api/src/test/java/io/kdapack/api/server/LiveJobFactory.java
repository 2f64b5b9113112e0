package io.kdapack.api.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.api.http.StrictJson;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.optim.AdamWState;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.checkpoint.TrainingState;
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
import io.kdapack.training.pipeline.WeightSnapshot;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Semaphore;

/**
 * Test double of the job factory whose jobs hold a real tiny {@link HybridModel}: job {@code {"steps": N, "gated": b,
 * "pause_ms": p}} runs N one-micro-batch steps; optimizer step s moves every weight by {@code 0.05·sin(i + s)} (a
 * deterministic change, so every step's model answers differently), the first half of the parameters, a pause of
 * {@code p} ms, then the second half (so a copy taken inside the update would be half an update). Every step is
 * checkpointed into the run directory {@code runs/<id>} under the data root, a {@code kdapack train} run directory, so
 * the weights of each step can be served from disk to compare. With {@code gated} each micro-batch waits for a
 * permit of {@link #gate}.
 */
final class LiveJobFactory implements JobFactory {
    static final String MODEL_YAML = """
            model:
              vocab_size: 258
              hidden_size: 16
              num_layers: 2
              full_attention_interval: 2
              intermediate_size: 24
              kda: {num_heads: 1, num_v_heads: 2, head_dim: 8}
              mla: {num_heads: 2, q_lora_rank: 8, kv_lora_rank: 8, qk_nope_head_dim: 4, qk_rope_head_dim: 4,
                    v_head_dim: 4}
              mtp: {depth: 0}
            train: {backend: cpu}
            """;

    final Semaphore gate = new Semaphore(0);
    private final Path dataRoot;

    LiveJobFactory(Path dataRoot) {
        this.dataRoot = dataRoot;
    }

    /** The run directory job {@code id} checkpoints into. */
    Path runDir(String id) {
        return dataRoot.resolve("runs").resolve(id);
    }

    @Override
    public TrainingBackend create(String jobId, JsonNode request) throws Exception {
        KdapackConfig config = ConfigLoader.fromYaml(MODEL_YAML);
        Path run = runDir(jobId);
        Files.createDirectories(run);
        Files.write(run.resolve("config.json"), StrictJson.write(config.toMap()));
        int steps = request.get("steps").asInt();
        boolean gated = request.path("gated").asBoolean(false);
        long pauseMs = request.path("pause_ms").asLong(0);
        CheckpointStore store = new CheckpointStore(run.resolve("checkpoints"));
        return new TrainingBackend() {
            @Override
            public TrainingPlan plan() {
                return new TrainingPlan(steps, 1, 1);
            }

            @Override
            public SampleSource samples() {
                return index -> {
                    if (gated) {
                        gate.acquire();
                    }
                    return new RawMicroBatch(index, 1, 5, new int[] {1, 2, 3, 4, 5}, new int[] {5});
                };
            }

            @Override
            public BatchSegmenter segmenter() {
                return raw -> new MicroBatch(1, 4, new int[] {1, 2, 3, 4}, new int[] {2, 3, 4, 5},
                        new float[] {1, 1, 1, 1}, new int[] {0, 1, 2, 3}, new int[] {1, 1, 1, 1}, null, null);
            }

            @Override
            public StepCompute createCompute() {
                return new Compute(config, store, pauseMs);
            }
        };
    }

    @Override
    public TrainingBackend resume(String jobId) {
        throw new UnsupportedOperationException("not used");
    }

    @Override
    public List<String> unfinishedJobs() {
        return List.of();
    }

    /** The tiny model with the initial weights every job starts from. */
    static HybridModel initialModel(KdapackConfig config) {
        HybridModel model = new HybridModel(config.model(), new KdaChunked(1), true);
        model.initialize(3);
        Random random = new Random(3);
        for (Parameter p : model.parameters()) {
            if (!p.name().endsWith("A_log") && !p.name().contains("conv1d") && !p.name().endsWith("norm.weight")) {
                p.initNormal(random, p.name().contains("embed_tokens") ? 1.0 : 0.35);
            }
        }
        return model;
    }

    private static final class Compute implements StepCompute {
        private final KdapackConfig config;
        private final CheckpointStore store;
        private final long pauseMs;
        private final HybridModel model;

        Compute(KdapackConfig config, CheckpointStore store, long pauseMs) {
            this.config = config;
            this.store = store;
            this.pauseMs = pauseMs;
            this.model = initialModel(config);
        }

        @Override
        public long restoreLatestCheckpoint() {
            return 0;
        }

        @Override
        public List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) {
            return microBatches.stream().map(b -> new MicroBatchLoss(new LossReport(1.0, 4), null)).toList();
        }

        @Override
        public OptimizerUpdate optimizerStep(StepLoss accumulated) throws InterruptedException {
            List<Parameter> parameters = model.parameters();
            int half = parameters.size() / 2;
            move(parameters.subList(0, half), accumulated.step());
            Thread.sleep(pauseMs);
            move(parameters.subList(half, parameters.size()), accumulated.step());
            return new OptimizerUpdate(0.5, 1e-3);
        }

        private static void move(List<Parameter> parameters, long step) {
            for (Parameter p : parameters) {
                float[] v = p.values();
                for (int i = 0; i < v.length; i++) {
                    v[i] += (float) (0.05 * Math.sin(i + step));
                }
            }
        }

        @Override
        public BatchLoss evaluate(MicroBatch batch) {
            throw new UnsupportedOperationException("not used");
        }

        @Override
        public WeightSnapshot snapshotWeights(long step) {
            return WeightSnapshot.of(step, config, model.parameters());
        }

        @Override
        public void saveCheckpoint(long step) throws Exception {
            store.save(Checkpoint.of(new TrainingState(step, 0, "test", Map.of()), model.parameters(),
                    new AdamWState(0, Map.of(), Map.of())));
        }
    }
}
