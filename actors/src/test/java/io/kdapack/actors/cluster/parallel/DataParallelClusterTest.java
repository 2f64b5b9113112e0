package io.kdapack.actors.cluster.parallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.TrainingCorpora;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two (and three) ranks of a data-parallel job on actor systems of one JVM joined as a Pekko cluster over loopback Artery:
 * the demo configuration (the shipped mqar dataset, the 3 KDA + 1 MLA model with MTP) shortened to 3 steps, with
 * {@code data_parallel: 2}, gives the step losses, MTP losses, gradient norms, learning rates and final weights and
 * AdamW moments of {@code kdapack train}'s single-JVM {@link Trainer} with the same configuration, bit for bit (exact
 * equality). The chunks are 16 KiB against a gradient of several hundred KiB, so the transport's windows and reordering
 * are exercised; Java serialization is off, so every remote message went through {@link ParallelSerializer}.
 */
@Timeout(120)
class DataParallelClusterTest {
    private static final Path DEMO = Path.of("").toAbsolutePath().getParent().resolve("datasets/mqar/mqar-train");
    private static final long CHUNK_BYTES = 16 << 10;
    private static LoopbackCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = new LoopbackCluster(3, CHUNK_BYTES, 2, Duration.ofSeconds(30));
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    /** The demo configuration, {@code steps} steps (the cosine decay over them), two blocks. */
    private static KdapackConfig demo(int steps, int interval) {
        return demo(steps, interval, 2, Map.of());
    }

    private static KdapackConfig demo(int steps, int interval, int ranks, Map<String, Object> extra) {
        Map<String, Object> train = new LinkedHashMap<>();
        train.put("steps", steps);
        train.put("threads", 1);
        train.put("data_parallel", ranks);
        train.putAll(extra);
        train.put("checkpoint", Map.of("interval", interval));
        // The demo's 10 warmup steps need more than 10 steps; one keeps a learning rate > 0 from step 2 on.
        train.put("optimizer", Map.of("warmup_steps", 1));
        return ConfigLoader.fromDocument(Map.of("train", train));
    }

    @Test
    void twoRanksOnTwoMembersEqualTheSingleJvmRun(@TempDir Path dir) throws Exception {
        KdapackConfig config = demo(3, 0);
        List<StepResult> expected = new ArrayList<>();
        List<Parameter> expectedParameters;
        try (Trainer local = Trainer.create(config, HybridModels.FACTORY, DEMO, dir.resolve("local"))) {
            for (int s = 0; s < 3; s++) {
                expected.add(local.step());
            }
            local.saveCheckpoint();
            expectedParameters = local.model().parameters();
        }
        Job job = runJob(config, dir.resolve("shared"), "job-a");
        assertEquals(expected.stream().map(DataParallelClusterTest::exact).toList(),
                job.steps(0).stream().map(e -> exact(e.result())).toList(), "rank 0 against kdapack train");
        assertEquals(expected.stream().map(DataParallelClusterTest::exact).toList(),
                job.steps(1).stream().map(e -> exact(e.result())).toList(), "rank 1 against kdapack train");

        long gradientBytes = 4L * expectedParameters.stream().mapToLong(Parameter::size).sum();
        assertTrue(gradientBytes > 20 * CHUNK_BYTES, "the gradient spans many chunks: " + gradientBytes);
        for (int r = 0; r < 2; r++) {
            for (RankEvent.StepDone step : job.steps(r)) {
                // Two ranks: rank 0 sends its block gradient up, rank 1 sends the sum back; each sends and receives
                // the gradient once.
                assertEquals(gradientBytes, step.timing().bytesSent(), "rank " + r + " bytes sent");
                assertEquals(gradientBytes, step.timing().bytesReceived(), "rank " + r + " bytes received");
                assertTrue(step.timing().exchangeNanos() > 0, "exchange time is recorded");
            }
        }
        assertEquals(List.of(dir.resolve("shared").resolve("step-00000003")),
                new CheckpointStore(dir.resolve("shared")).checkpoints(), "rank 0 wrote the final checkpoint, once");
        assertSameState(CheckpointStore.load(dir.resolve("local").resolve("step-00000003")),
                CheckpointStore.load(dir.resolve("shared").resolve("step-00000003")));
    }

    @Test
    void aJobResumedOnTwoRanksContinuesBitIdentically(@TempDir Path dir) throws Exception {
        KdapackConfig config = demo(4, 2);
        List<StepResult> straight = new ArrayList<>();
        try (Trainer local = Trainer.create(config, HybridModels.FACTORY, DEMO, dir.resolve("local"))) {
            for (int s = 0; s < 4; s++) {
                straight.add(local.step());
            }
            local.saveCheckpoint();
        }
        Path shared = dir.resolve("shared");
        // Run to step 2 in a local process (rank 0 and the single JVM write the same checkpoint), then resume on two.
        try (Trainer first = Trainer.create(config, HybridModels.FACTORY, DEMO, shared)) {
            first.step();
            first.step();
            first.saveCheckpoint();
        }
        Job job = runJob(config, shared, "job-b");
        assertEquals(2L, job.started(0).fromStep());
        assertEquals(straight.subList(2, 4).stream().map(DataParallelClusterTest::exact).toList(),
                job.steps(0).stream().map(e -> exact(e.result())).toList());
        assertSameState(CheckpointStore.load(dir.resolve("local").resolve("step-00000004")),
                CheckpointStore.load(shared.resolve("step-00000004")));
    }

    @Test
    void threeRanksChainTheSumAndSplitTheValidation(@TempDir Path dir) throws Exception {
        // Rank 1 is the middle of both chains (it adds and forwards partial sums, and forwards the result).
        KdapackConfig config = demo(2, 0, 3, Map.of("num_microbatches", 3, "micro_batch_size", 2, "eval_interval", 2,
                "eval_iters", 1, "calculate_per_token_loss", true));
        List<StepResult> expected = new ArrayList<>();
        try (Trainer local = Trainer.create(config, HybridModels.FACTORY, DEMO, dir.resolve("local"))) {
            expected.add(local.step());
            expected.add(local.step());
            local.saveCheckpoint();
        }
        assertTrue(expected.get(1).valLoss() != null, "the run validates after step 2");
        Job job = runJob(config, dir.resolve("shared"), "job-c");
        for (int r = 0; r < 3; r++) {
            assertEquals(expected.stream().map(DataParallelClusterTest::exact).toList(),
                    job.steps(r).stream().map(e -> exact(e.result())).toList(), "rank " + r);
        }
        assertSameState(CheckpointStore.load(dir.resolve("local").resolve("step-00000002")),
                CheckpointStore.load(dir.resolve("shared").resolve("step-00000002")));
    }

    @Test
    void aStoppedRankFailsTheOthersWithoutAHang(@TempDir Path dir) throws Exception {
        KdapackConfig config = demo(30, 0);
        TestProbe<RankEvent> listener = TestProbe.create(cluster.systems.getFirst());
        List<ActorRef<RankRunner.Command>> ranks = spawnRanks(config, dir, "job-d", listener.getRef());
        // Stop rank 1 alone, mid-run: it ends after the step under way, rank 0 learns it from the watch (or its timeout).
        listener.fishForMessage(Duration.ofSeconds(40), e -> e instanceof RankEvent.StepDone d && d.rank() == 1
                ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore());
        ranks.get(1).tell(new RankRunner.Stop("test"));
        List<RankEvent.Failed> failed = new ArrayList<>();
        while (failed.size() < 2) {
            RankEvent event = listener.receiveMessage(Duration.ofSeconds(40));
            assertTrue(!(event instanceof RankEvent.Finished), () -> "a rank finished: " + event);
            if (event instanceof RankEvent.Failed f) {
                failed.add(f);
            }
        }
        RankEvent.Failed rank1 = failed.stream().filter(f -> f.rank() == 1).findFirst().orElseThrow();
        RankEvent.Failed rank0 = failed.stream().filter(f -> f.rank() == 0).findFirst().orElseThrow();
        assertEquals("stopped", rank1.reason());
        assertTrue(rank0.reason().contains("rank 1"), rank0.reason());
        assertTrue(rank1.stepsDone() >= 1 && rank0.stepsDone() < 30, "stopped mid-run: " + failed);
        assertTrue(Math.abs(rank0.stepsDone() - rank1.stepsDone()) <= 1, "no rank ran ahead: " + failed);
    }

    /** What a job's ranks reported. */
    private record Job(List<RankEvent> events) {
        List<RankEvent.StepDone> steps(int rank) {
            return events.stream().filter(e -> e.rank() == rank && e instanceof RankEvent.StepDone)
                    .map(e -> (RankEvent.StepDone) e).toList();
        }

        RankEvent.Started started(int rank) {
            return events.stream().filter(e -> e.rank() == rank && e instanceof RankEvent.Started)
                    .map(e -> (RankEvent.Started) e).findFirst().orElseThrow();
        }
    }

    /** Rank r on system r, the listener on system 0 (so the other ranks' events cross the network too). */
    private static Job runJob(KdapackConfig config, Path checkpoints, String jobId) throws Exception {
        TestProbe<RankEvent> listener = TestProbe.create(cluster.systems.getFirst());
        spawnRanks(config, checkpoints, jobId, listener.getRef());
        List<RankEvent> events = new ArrayList<>();
        int finished = 0;
        while (finished < config.train().dataParallel()) {
            RankEvent event = listener.receiveMessage(Duration.ofSeconds(60));
            assertTrue(!(event instanceof RankEvent.Failed), () -> "rank failed: " + event);
            events.add(event);
            if (event instanceof RankEvent.Finished) {
                finished++;
            }
        }
        return new Job(events);
    }

    /** Spawns rank r on system r and sends every rank the peers. */
    private static List<ActorRef<RankRunner.Command>> spawnRanks(KdapackConfig config, Path checkpoints, String jobId,
                                                                 ActorRef<RankEvent> listener) throws Exception {
        List<ActorRef<RankRunner.Command>> ranks = new ArrayList<>();
        for (int r = 0; r < config.train().dataParallel(); r++) {
            RankSpec spec = new RankSpec(jobId, r, config, HybridModels.FACTORY, TrainingCorpora.single(DEMO), checkpoints,
                    cluster.settings(), listener);
            ranks.add(cluster.spawn(r, RankRunner.create(spec), jobId + "-rank-" + r));
        }
        for (ActorRef<RankRunner.Command> rank : ranks) {
            rank.tell(new RankRunner.Peers(ranks));
        }
        return ranks;
    }

    private static void assertSameState(Checkpoint expected, Checkpoint actual) {
        assertEquals(expected.state(), actual.state());
        assertEquals(expected.weights().keySet(), actual.weights().keySet());
        for (String name : expected.weights().keySet()) {
            assertArrayEquals(floats(expected.weights().get(name)), floats(actual.weights().get(name)), name);
        }
        assertEquals(expected.optimizer().step(), actual.optimizer().step());
        for (String name : expected.optimizer().expAvg().keySet()) {
            assertArrayEquals(expected.optimizer().expAvg().get(name), actual.optimizer().expAvg().get(name), name);
            assertArrayEquals(expected.optimizer().expAvgSq().get(name), actual.optimizer().expAvgSq().get(name), name);
        }
    }

    private static float[] floats(Tensor t) {
        var buffer = t.data().duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        float[] out = new float[buffer.remaining()];
        buffer.get(out);
        return out;
    }

    /** The step result without its wall-clock field, printed exactly. */
    private static String exact(StepResult r) {
        return new StepResult(r.step(), r.loss(), r.mtpLoss(), r.tokens(), r.segments(), r.gradNorm(), r.lr(), 0,
                r.valLoss(), r.valMtpLoss()).toJson();
    }
}
