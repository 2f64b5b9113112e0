package io.kdapack.actors.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.config.ClusterConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * What the cluster tests that run several members in this JVM share: a member's settings, joining them, an api member's
 * job control, and a worker's jobs scripted in memory.
 */
final class InProcessMembers {
    private InProcessMembers() {
    }

    /**
     * A member's settings: the cluster's own (port 0, no seeds: joined by hand) with role {@code role} and the split
     * brain resolver's {@code stableAfterMs}, Java serialization off, no JVM exit or JVM hook on shutdown.
     */
    static Config config(String role, long stableAfterMs) {
        return config(role, stableAfterMs, ConfigFactory.empty());
    }

    /** {@link #config(String, long)} with {@code overrides} over Pekko's reference settings (and under the member's). */
    static Config config(String role, long stableAfterMs, Config overrides) {
        ClusterConfig defaults = ClusterConfig.defaults();
        return ClusterNode.pekkoConfig(new ClusterConfig(true, "127.0.0.1", 0, List.of(), List.of(role),
                        defaults.splitBrainResolver(), stableAfterMs, defaults.failureTimeoutMs(),
                        defaults.joinTimeoutMs()))
                .withFallback(ConfigFactory.parseString("""
                        pekko.loglevel = WARNING
                        pekko.actor.allow-java-serialization = off
                        pekko.coordinated-shutdown.exit-jvm = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        """))
                .withFallback(overrides)
                .withFallback(ConfigFactory.load());
    }

    /** An api member's job control, as {@code ClusterNode} starts it: the event topic, the job directory, the job manager. */
    record ApiJobs(ActorRef<Topic.Command<JobEventMessage>> topic, ActorRef<JobDirectory.Command> directory,
                   ActorRef<JobManager.Command> manager) {
    }

    /**
     * Starts {@link ApiJobs} on {@code api}: each job's journal is {@code dir/<id>/events.jsonl}, every job has one rank,
     * and the directory and the manager wait {@code wait} for an answer.
     */
    static ApiJobs apiJobs(ActorSystem<?> api, Path dir, Duration wait) {
        ActorRef<Topic.Command<JobEventMessage>> topic = api.systemActorOf(EventTopic.create(), "job-events",
                Props.empty());
        ActorRef<JobDirectory.Command> directory = api.systemActorOf(JobDirectory.create(wait,
                id -> dir.resolve(id).resolve("events.jsonl"), topic), "job-directory", Props.empty());
        ActorRef<JobManager.Command> manager = api.systemActorOf(ClusterJobManager.create(directory, topic,
                id -> dir.resolve(id).resolve("events.jsonl"), id -> 1, wait), "cluster-jobs", Props.empty());
        return new ApiJobs(topic, directory, manager);
    }

    /** Joins {@code systems} to the first of them and waits until each sees itself {@code Up}, at most {@code wait}. */
    static void join(List<? extends ActorSystem<?>> systems, Duration wait) throws InterruptedException {
        for (ActorSystem<?> system : systems) {
            Cluster.get(system).manager().tell(Join.create(Cluster.get(systems.getFirst()).selfMember().address()));
        }
        long deadline = System.nanoTime() + wait.toNanos();
        for (ActorSystem<?> system : systems) {
            while (Cluster.get(system).selfMember().status() != MemberStatus.up()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the members did not come up within " + wait.toSeconds() + " s");
                }
                Thread.sleep(50);
            }
        }
    }

    /**
     * A worker's jobs, scripted: a run starts {@code running} (10 steps) and ends when the test puts its end in
     * {@code runs}; a cancellation is refused as of an ended run; a purge forgets an ended run and refuses a running one.
     */
    record ScriptedJobs(Path dir, Map<String, JobStatus> runs) implements LocalJobs {
        ScriptedJobs(Path dir) {
            this(dir, new ConcurrentHashMap<>());
        }

        @Override
        public CompletionStage<JobStatus> start(String jobId) {
            JobStatus running = new JobStatus(jobId, JobState.RUNNING, 0, 10, null, Instant.now(), null, null);
            runs.put(jobId, running);
            return CompletableFuture.completedFuture(running);
        }

        @Override
        public CompletionStage<Optional<JobStatus>> get(String jobId) {
            return CompletableFuture.completedFuture(Optional.ofNullable(runs.get(jobId)));
        }

        @Override
        public CompletionStage<List<JobStatus>> list() {
            return CompletableFuture.completedFuture(List.copyOf(runs.values()));
        }

        @Override
        public CompletionStage<JobStatus> cancel(String jobId) {
            return CompletableFuture.failedFuture(new RunRefused(409, "job " + jobId + " has ended", null));
        }

        @Override
        public CompletionStage<Optional<JobStatus>> purge(String jobId) {
            JobStatus status = runs.get(jobId);
            if (status != null && !status.state().isTerminal()) {
                return CompletableFuture.failedFuture(new RunRefused(409, "job " + jobId + " is running", null));
            }
            return CompletableFuture.completedFuture(Optional.ofNullable(runs.remove(jobId)));
        }

        @Override
        public RankSpec rankSpec(String jobId, int rank, ExchangeSettings exchange, ActorRef<RankEvent> listener) {
            throw new UnsupportedOperationException("single-worker jobs only");
        }

        @Override
        public long totalSteps(String jobId) {
            return 10;
        }

        @Override
        public Path journal(String jobId) {
            return dir.resolve(jobId).resolve("events.jsonl");
        }
    }
}
