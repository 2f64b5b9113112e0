package io.kdapack.actors.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.config.ClusterConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code DELETE /v1/jobs/{id}?purge=true} on a cluster's api member: its {@link ClusterJobManager} refuses the purge at
 * once with a 501 that says why, instead of leaving the server's ask to time out (it had no handler for
 * {@link JobManager.Purge}). One api member, a cluster of itself; a few seconds beyond Pekko's start.
 */
@Timeout(60)
class ClusterPurgeTest {

    /** Far above an in-JVM round trip (milliseconds), far below any ask timeout of the server. */
    private static final Duration PROMPT = Duration.ofSeconds(2);
    private static final Duration WAIT = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    @Test
    void aPurgeIsRefusedAtOnceWithTheReason() {
        ClusterConfig defaults = ClusterConfig.defaults();
        ActorSystem<Void> api = ActorSystem.create(Behaviors.empty(), ClusterNode.SYSTEM_NAME, ClusterNode.pekkoConfig(
                        new ClusterConfig(true, "127.0.0.1", 0, List.of(), List.of("api"),
                                defaults.splitBrainResolver(), defaults.stableAfterMs(), defaults.failureTimeoutMs(),
                                defaults.joinTimeoutMs()))
                .withFallback(ConfigFactory.parseString("""
                        pekko.loglevel = WARNING
                        pekko.coordinated-shutdown.exit-jvm = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        """))
                .withFallback(ConfigFactory.load()));
        try {
            Cluster.get(api).manager().tell(Join.create(Cluster.get(api).selfMember().address()));
            ActorRef<Topic.Command<JobEventMessage>> topic = api.systemActorOf(EventTopic.create(), "job-events",
                    Props.empty());
            ActorRef<JobDirectory.Command> directory = api.systemActorOf(JobDirectory.create(WAIT,
                    id -> dir.resolve(id).resolve("events.jsonl"), topic), "job-directory", Props.empty());
            ActorRef<JobManager.Command> manager = api.systemActorOf(ClusterJobManager.create(directory, topic,
                    id -> dir.resolve(id).resolve("events.jsonl"), id -> 1, WAIT), "cluster-jobs", Props.empty());

            TestProbe<StatusReply<Optional<JobStatus>>> purged = TestProbe.create(api);
            long asked = System.nanoTime();
            manager.tell(new JobManager.Purge("j-ended", purged.getRef()));
            StatusReply<Optional<JobStatus>> reply = purged.receiveMessage(WAIT);
            long purgeMs = (System.nanoTime() - asked) / 1_000_000;

            assertTrue(reply.isError(), () -> "the purge answered " + reply.getValue());
            RunRefused refused = assertInstanceOf(RunRefused.class, reply.getError());
            assertEquals(501, refused.status(), refused.getMessage());
            assertEquals("purge", refused.field());
            assertTrue(refused.getMessage().contains("j-ended") && refused.getMessage().contains("nothing was removed"),
                    refused.getMessage());
            assertTrue(purgeMs < PROMPT.toMillis(), "the purge answered after " + purgeMs + " ms");
        } finally {
            api.terminate();
            api.getWhenTerminated().toCompletableFuture().completeOnTimeout(null, 20, TimeUnit.SECONDS).join();
        }
    }
}
