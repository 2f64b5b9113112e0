package io.kdapack.training;

import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.data.synthetic.AssociativeRecall;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A small associative-recall dataset and tiny configurations for training-loop tests. */
final class TrainingFixtures {
    static final AssociativeRecall TASK = AssociativeRecall.demo();

    private TrainingFixtures() {
    }

    /** {@code dir/recall-train.bin/.idx}: 400 documents. */
    static Path dataset(Path dir) throws IOException {
        Path prefix = dir.resolve("recall-train");
        RecallDatasets.write(prefix, TASK, 400, 7);
        return prefix;
    }

    /**
     * The demo model's vocabulary with a tiny run: {@code steps} steps of M=2 micro-batches of B=2 samples of L=48,
     * lr 0.05 without warmup, checkpoints every {@code interval} steps, on {@code threads} threads.
     */
    static KdapackConfig config(int steps, int interval, int threads, boolean perTokenLoss, Map<String, Object> extraTrain) {
        Map<String, Object> train = new LinkedHashMap<>();
        train.put("seed", 99);
        train.put("steps", steps);
        train.put("micro_batch_size", 2);
        train.put("num_microbatches", 2);
        train.put("seq_length", 48);
        train.put("calculate_per_token_loss", perTokenLoss);
        train.put("threads", threads);
        train.put("optimizer", Map.of("lr", 0.05, "min_lr", 0.005, "warmup_steps", 0));
        train.put("checkpoint", Map.of("interval", interval));
        train.putAll(extraTrain);
        return ConfigLoader.fromDocument(Map.of("train", train));
    }

    static KdapackConfig config(int steps, int interval, int threads) {
        return config(steps, interval, threads, false, Map.of());
    }

    /** Runs {@code steps} steps from where {@code trainer} stands. */
    static List<StepResult> run(Trainer trainer, int steps) {
        return java.util.stream.IntStream.range(0, steps).mapToObj(i -> trainer.step()).toList();
    }
}
