package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.parallel.GradientExchange;
import io.kdapack.training.parallel.InProcessGradientExchange;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code train.data_parallel = N}: the N ranks of a run, each a thread with its own model joined by an
 * {@link InProcessGradientExchange}, give the losses, MTP losses, gradient norms, validation losses and weights of one
 * process running the N blocks one after the other, bit for bit (assertEquals on doubles and assertArrayEquals on
 * floats compare exactly): the hybrid demo model (3 KDA + 1 MLA, MTP on, narrowed) for the equality itself, the test
 * bigram model (MTP on) for the order and resume checks.
 */
class DataParallelTrainerTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** A tiny hybrid run: M = 4 micro-batches of B = 2 samples of L = 32, validation every 2 steps. */
    private static KdapackConfig config(int steps, int dataParallel, boolean perTokenLoss) {
        Map<String, Object> train = new LinkedHashMap<>();
        train.put("seed", 5);
        train.put("steps", steps);
        train.put("micro_batch_size", 2);
        train.put("num_microbatches", 4);
        train.put("seq_length", 32);
        train.put("calculate_per_token_loss", perTokenLoss);
        train.put("threads", 1);
        train.put("data_parallel", dataParallel);
        train.put("eval_interval", 2);
        train.put("eval_iters", 1);
        train.put("data", Map.of("split", "80,20,0"));
        train.put("optimizer", Map.of("lr", 0.01, "min_lr", 0.001, "warmup_steps", 0, "clip_grad", 0.5));
        return ConfigLoader.fromDocument(Map.of("train", train, "model", Map.of("hidden_size", 32,
                "intermediate_size", 64)));
    }

    @Test
    void twoRanksEqualTheLocalBlocksBitForBit(@TempDir Path dir) throws Exception {
        for (boolean perToken : new boolean[] {false, true}) {
            Path data = TrainingFixtures.dataset(dir.resolve("data-" + perToken));
            KdapackConfig config = config(2, 2, perToken);
            // The global token mean (its weights need every rank's counts) on the hybrid model, the default mode on the
            // bigram model, to keep the test short.
            ModelFactory models = perToken ? HybridModels.FACTORY : BigramModel.FACTORY;
            Run local = local(models, config, data, dir.resolve("local-" + perToken), 2);
            Run ranks = ranks(models, config, data, dir.resolve("ranks-" + perToken), 2, false);
            assertSameRun(local, ranks, "per-token " + perToken);
            assertNotNull(local.results.get(1).valLoss(), "the run validates after step 2");
            assertNotNull(local.results.getFirst().mtpLoss(), "the demo model has MTP");
        }
    }

    @Test
    void blocksChangeOnlyTheAccumulationOrder(@TempDir Path dir) throws Exception {
        Path data = TrainingFixtures.dataset(dir);
        Run one = local(BigramModel.FACTORY, config(2, 1, false), data, dir.resolve("n1"), 2);
        Run two = local(BigramModel.FACTORY, config(2, 2, false), data, dir.resolve("n2"), 2);
        Run four = local(BigramModel.FACTORY, config(2, 4, false), data, dir.resolve("n4"), 2);
        for (int s = 0; s < 2; s++) {
            // The losses of step 1 are forward passes of the same weights; the gradients are the same sum in another
            // order, so the norms agree to rounding (fp32 sums of four terms: 1e-5 relative is far above rounding).
            assertEquals(one.results.get(0).loss(), two.results.get(0).loss());
            assertEquals(one.results.get(0).loss(), four.results.get(0).loss());
            double n1 = one.results.get(s).gradNorm();
            assertEquals(n1, two.results.get(s).gradNorm(), 1e-5 * n1);
            assertEquals(n1, four.results.get(s).gradNorm(), 1e-5 * n1);
        }
    }

    @Test
    void resumeOnTwoRanksContinuesTheLocalRun(@TempDir Path dir) throws Exception {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = config(4, 2, true);
        Run straight = local(BigramModel.FACTORY, config, data, dir.resolve("straight"), 4);
        Path shared = dir.resolve("shared");
        ranks(BigramModel.FACTORY, config, data, shared, 2, true);
        assertEquals(List.of(shared.resolve("step-00000002")), listCheckpoints(shared),
                "rank 0 alone wrote the one checkpoint");
        Run resumed = ranks(BigramModel.FACTORY, config, data, shared, 2, true);
        assertEquals(straight.results.subList(2, 4).stream().map(DataParallelTrainerTest::exact).toList(),
                resumed.results.stream().map(DataParallelTrainerTest::exact).toList());
        for (int p = 0; p < straight.weights.size(); p++) {
            assertArrayEquals(straight.weights.get(p), resumed.weights.get(p), "weight " + p);
        }
    }

    @Test
    void theExchangeMustHaveOneOrNRanks(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        List<GradientExchange> three = InProcessGradientExchange.group(3, TIMEOUT);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Trainer.create(config(2, 2,
                false), BigramModel.FACTORY, TrainingCorpora.single(data), dir.resolve("c"), three.getFirst()));
        assertTrue(e.getMessage().contains("train.data_parallel = 2"), e.getMessage());
    }

    private record Run(List<StepResult> results, List<float[]> weights) {
    }

    private static Run local(ModelFactory models, KdapackConfig config, Path data, Path checkpoints, int steps)
            throws IOException {
        try (Trainer trainer = Trainer.create(config, models, data, checkpoints)) {
            return new Run(TrainingFixtures.run(trainer, steps), weights(trainer));
        }
    }

    /** {@code N = data_parallel} rank threads; optionally resumed from and checkpointed to {@code checkpoints}. */
    private static Run ranks(ModelFactory models, KdapackConfig config, Path data, Path checkpoints, int steps,
                             boolean checkpoint) throws Exception {
        int n = config.train().dataParallel();
        List<GradientExchange> exchanges = InProcessGradientExchange.group(n, TIMEOUT);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<Run>> futures = new ArrayList<>();
            for (GradientExchange exchange : exchanges) {
                futures.add(pool.submit(() -> {
                    try (Trainer trainer = Trainer.create(config, models, TrainingCorpora.single(data), checkpoints,
                            exchange)) {
                        if (checkpoint) {
                            trainer.restoreLatest();
                        }
                        List<StepResult> results = TrainingFixtures.run(trainer, steps);
                        if (checkpoint) {
                            trainer.saveCheckpoint();
                        }
                        return new Run(results, weights(trainer));
                    }
                }));
            }
            List<Run> runs = new ArrayList<>();
            for (Future<Run> f : futures) {
                runs.add(f.get());
            }
            for (int r = 1; r < n; r++) {
                assertSameRun(runs.getFirst(), runs.get(r), "rank " + r + " against rank 0");
            }
            return runs.getFirst();
        } finally {
            pool.shutdownNow();
        }
    }

    private static void assertSameRun(Run expected, Run actual, String what) {
        assertEquals(expected.results.stream().map(DataParallelTrainerTest::exact).toList(),
                actual.results.stream().map(DataParallelTrainerTest::exact).toList(), what);
        for (int p = 0; p < expected.weights.size(); p++) {
            assertArrayEquals(expected.weights.get(p), actual.weights.get(p), what + ": weight " + p);
        }
    }

    /** The step result without its wall-clock field. */
    private static String exact(StepResult r) {
        return new StepResult(r.step(), r.loss(), r.mtpLoss(), r.tokens(), r.segments(), r.gradNorm(), r.lr(), 0,
                r.valLoss(), r.valMtpLoss()).toJson();
    }

    /** The weights, in parameter order (the actors module's cluster test compares the AdamW moments too). */
    private static List<float[]> weights(Trainer trainer) throws IOException {
        List<float[]> out = new ArrayList<>();
        for (Parameter p : trainer.model().parameters()) {
            out.add(p.values().clone());
        }
        return out;
    }

    private static List<Path> listCheckpoints(Path root) throws IOException {
        try (var s = Files.list(root)) {
            return s.filter(p -> p.getFileName().toString().startsWith("step-")).sorted().toList();
        }
    }
}
