package io.kdapack.actors.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.ParallelTransport;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.config.ClusterConfig;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.TrainingCorpora;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A data-parallel run as the cluster drives it, on two actor systems in this JVM joined over loopback Artery with the
 * cluster's own settings ({@link ClusterNode#pekkoConfig} and {@link ParallelTransport#artery}): rank 0's
 * {@link WorkerAgent} coordinates it, each agent spawns its rank under {@code /system}. The job's events (topic and
 * journal) are rank 0's steps, equal to the single-JVM {@link Trainer} bit for bit, and its status ends
 * {@code succeeded}; then, in a second run, the member of rank 1 going away mid-run ends the job {@code failed} with a
 * reason naming rank 1, within {@code kdapack.parallel.timeout}, never a hang.
 */
@Timeout(180)
class ParallelRunTest {

    private static final Path DEMO = Path.of("").toAbsolutePath().getParent().resolve("datasets/mqar/mqar-train");
    private static final Duration PEER_TIMEOUT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    /** The demo configuration, {@code steps} steps, two ranks, a checkpoint at the last step only. */
    private static KdapackConfig demo(int steps) {
        Map<String, Object> train = new LinkedHashMap<>();
        train.put("steps", steps);
        train.put("threads", 1);
        train.put("data_parallel", 2);
        train.put("checkpoint", Map.of("interval", 0));
        train.put("optimizer", Map.of("warmup_steps", 1));
        return ConfigLoader.fromDocument(Map.of("train", train));
    }

    /** One job's record, as a worker's job factory reads it: the same on both members (a shared directory). */
    private record Jobs(Path dir, Map<String, KdapackConfig> configs) implements LocalJobs {
        @Override
        public CompletionStage<JobStatus> start(String jobId) {
            return CompletableFuture.failedFuture(new RunRefused(400, "not a single-worker job", null));
        }

        @Override
        public CompletionStage<Optional<JobStatus>> get(String jobId) {
            return CompletableFuture.completedFuture(Optional.empty());
        }

        @Override
        public CompletionStage<List<JobStatus>> list() {
            return CompletableFuture.completedFuture(List.of());
        }

        @Override
        public CompletionStage<JobStatus> cancel(String jobId) {
            return CompletableFuture.failedFuture(new RunRefused(404, "no job " + jobId, null));
        }

        @Override
        public CompletionStage<Optional<JobStatus>> purge(String jobId) {
            return CompletableFuture.failedFuture(new RunRefused(404, "no job " + jobId, null));
        }

        @Override
        public RankSpec rankSpec(String jobId, int rank, ExchangeSettings exchange, ActorRef<RankEvent> listener) {
            return new RankSpec(jobId, rank, configs.get(jobId), HybridModels.FACTORY, TrainingCorpora.single(DEMO),
                    dir.resolve(jobId).resolve("checkpoints"), exchange, listener);
        }

        @Override
        public long totalSteps(String jobId) {
            return configs.get(jobId).train().steps();
        }

        @Override
        public Path journal(String jobId) {
            return dir.resolve(jobId).resolve("events.jsonl");
        }
    }

    @Test
    void rankZerosWorkerRunsTheJobAndAWorkerGoneFailsIt() throws Exception {
        Map<String, KdapackConfig> configs = Map.of("dp-ok", demo(3), "dp-lost", demo(40));
        for (String id : configs.keySet()) {
            Files.createDirectories(dir.resolve(id));
        }
        Jobs jobs = new Jobs(dir, configs);
        List<ActorSystem<Void>> systems = new ArrayList<>();
        try {
            List<ActorRef<WorkerAgent.Command>> agents = new ArrayList<>();
            List<ActorRef<Topic.Command<JobEventMessage>>> topics = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), ClusterNode.SYSTEM_NAME, config());
                systems.add(system);
                ActorRef<JobManager.Command> manager = TestProbe.<JobManager.Command>create(system).getRef();
                ActorRef<Topic.Command<JobEventMessage>> topic = system.systemActorOf(EventTopic.create(), "job-events",
                        org.apache.pekko.actor.typed.Props.empty());
                topics.add(topic);
                agents.add(system.systemActorOf(WorkerAgent.create(jobs, manager, topic, Duration.ofSeconds(30)),
                        "worker", org.apache.pekko.actor.typed.Props.empty()));
            }
            InProcessMembers.join(systems, Duration.ofSeconds(30));
            ActorSystem<Void> first = systems.getFirst();
            TestProbe<JobEventMessage> events = TestProbe.create(first);
            topics.getFirst().tell(Topic.subscribe(events.getRef()));
            Thread.sleep(500); // the local subscription registers before the first publish

            TestProbe<RunReply> replies = TestProbe.create(first);
            agents.getFirst().tell(new WorkerAgent.StartParallel("dp-ok", agents, replies.getRef()));
            RunReply started = replies.receiveMessage(Duration.ofSeconds(60));
            assertNotNull(started.status(), () -> "refused: " + started.refusal());
            List<StepEvent> steps = new ArrayList<>();
            JobEventMessage message;
            do {
                message = events.receiveMessage(Duration.ofSeconds(90));
                if (message.step() != null) {
                    steps.add(message.step());
                }
            } while (message.end() == null);
            assertEquals(JobState.SUCCEEDED, message.end().state(), message.end().toString());
            assertEquals(3, message.end().step());
            List<StepResult> expected = new ArrayList<>();
            try (Trainer local = Trainer.create(configs.get("dp-ok"), HybridModels.FACTORY, DEMO, dir.resolve("local"))) {
                while (!local.finished()) {
                    expected.add(local.step());
                }
            }
            assertEquals(expected.size(), steps.size());
            for (int s = 0; s < expected.size(); s++) {
                assertEquals(Double.doubleToLongBits(expected.get(s).loss()), Double.doubleToLongBits(steps.get(s).loss()),
                        "loss of step " + (s + 1));
                assertEquals(Double.doubleToLongBits(expected.get(s).gradNorm()),
                        Double.doubleToLongBits(steps.get(s).gradNorm()), "grad norm of step " + (s + 1));
                assertTrue(steps.get(s).exchangeBytes() > 0 && steps.get(s).exchangeS() > 0, steps.get(s).toString());
            }
            assertEquals(steps, EventJournal.readSteps(jobs.journal("dp-ok")), "the journal holds the published steps");
            assertEquals(JobState.SUCCEEDED, EventJournal.lastEnd(jobs.journal("dp-ok")).orElseThrow().state());
            assertEquals(JobState.SUCCEEDED, status(agents.getFirst(), first, "dp-ok").state());

            agents.getFirst().tell(new WorkerAgent.StartParallel("dp-lost", agents, replies.getRef()));
            assertNotNull(replies.receiveMessage(Duration.ofSeconds(60)).status());
            do {
                message = events.receiveMessage(Duration.ofSeconds(90));
            } while (message.step() == null);
            systems.get(1).terminate(); // rank 1's member goes away mid-run
            long goneAt = System.nanoTime();
            do {
                message = events.receiveMessage(PEER_TIMEOUT.plusSeconds(30));
            } while (message.end() == null);
            long endedAfterMs = (System.nanoTime() - goneAt) / 1_000_000;
            assertEquals(JobState.FAILED, message.end().state(), message.end().toString());
            assertTrue(message.end().error().contains("rank 1") || message.end().error().contains("rank 0"),
                    message.end().error());
            assertTrue(endedAfterMs < PEER_TIMEOUT.toMillis() + 10_000, "ended after " + endedAfterMs + " ms");
            JobStatus failed = status(agents.getFirst(), first, "dp-lost");
            assertEquals(JobState.FAILED, failed.state());
            assertTrue(failed.step() < 40, failed.toString());
        } finally {
            for (ActorSystem<Void> system : systems) {
                system.terminate();
            }
            for (ActorSystem<Void> system : systems) {
                system.getWhenTerminated().toCompletableFuture().completeOnTimeout(null, 20, TimeUnit.SECONDS).join();
            }
        }
    }

    private static JobStatus status(ActorRef<WorkerAgent.Command> agent, ActorSystem<?> system, String id) {
        TestProbe<RunReply> probe = TestProbe.create(system);
        agent.tell(new WorkerAgent.GetRun(id, probe.getRef()));
        return probe.receiveMessage(Duration.ofSeconds(10)).status();
    }

    /** A member's settings: the cluster's own (port 0, no seeds: joined by hand) and the gradient lane. */
    private static Config config() {
        return InProcessMembers.config("worker", ClusterConfig.defaults().stableAfterMs(), ConfigFactory.parseString(
                        "kdapack.parallel.timeout = " + PEER_TIMEOUT.toMillis() + "ms")
                .withFallback(ParallelTransport.artery(1 << 20)));
    }
}
