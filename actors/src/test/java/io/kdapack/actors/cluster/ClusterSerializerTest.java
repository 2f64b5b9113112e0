package io.kdapack.actors.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankRunner;
import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import java.io.NotSerializableException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Every kind of message that crosses members comes back equal from its JSON; nothing else is read from the wire. */
class ClusterSerializerTest {

    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final ClusterSerializer SERIALIZER =
            new ClusterSerializer((ExtendedActorSystem) Adapter.toClassic(KIT.system()));

    @AfterAll
    static void stop() {
        KIT.shutdownTestKit();
    }

    @Test
    void messagesRoundTrip() throws Exception {
        TestProbe<RunReply> replies = KIT.createTestProbe();
        TestProbe<WorkerAgent.Command> worker = KIT.createTestProbe();
        TestProbe<RankEvent> ranks = KIT.createTestProbe();
        TestProbe<WorkerAgent.RankSpawned> spawned = KIT.createTestProbe();
        TestProbe<RankRunner.Command> runner = KIT.createTestProbe();
        JobStatus running = new JobStatus("j1", JobState.RUNNING, 3, 10, 2.5, Instant.parse("2026-12-01T23:00:00.123Z"),
                null, null);
        JobStatus failed = new JobStatus("j2", JobState.FAILED, 4, 10, null, null, Instant.EPOCH, "worker left");
        for (ClusterMessage message : List.<ClusterMessage>of(
                RunReply.of(running), RunReply.refused(new RunRefused(400, "too big", "model.hidden_size")),
                RunReply.unknown(),
                JobEventMessage.of("j1", new StepEvent(3, 2.5, null, 128, 4, 0.75, 1e-3, 5000.5, 2.25, null)),
                JobEventMessage.of("j1", new EndEvent(JobState.SUCCEEDED, 10, null)),
                JobEventMessage.of("j1", new StepEvent(4, 2.25, null, 128, 4, 0.5, 1e-3, 4000.0, null, null, 65_536L,
                        0.125)),
                new WorkerAgent.StartParallel("j1", List.of(worker.ref(), worker.ref()), replies.ref()),
                new WorkerAgent.SpawnRank("j1", 1, ranks.ref(), spawned.ref()),
                new WorkerAgent.RankSpawned(runner.ref(), null),
                new WorkerAgent.RankSpawned(null, new RunRefused(404, "no job j1 on disk", null).toRefusal()),
                new WorkerAgent.StartRun("j1", replies.ref()), new WorkerAgent.RunList(worker.ref(), List.of(running, failed)),
                new JobDirectory.Submit("j1", 2, replies.ref()),
                new WorkerAgent.PurgeRun("j1", replies.ref()), new JobDirectory.Purge("j1", replies.ref()),
                new JobDirectory.PurgeDone("j1"),
                new JobDirectory.Location("j1", List.of(worker.ref()), List.of("pekko://kdapack@127.0.0.1:2553"), failed,
                        true),
                new JobDirectory.Placements(List.of(new JobDirectory.Location("j3", List.of(), List.of(), null, false))))) {
            byte[] bytes = SERIALIZER.toBinary(message);
            assertEquals(message, SERIALIZER.fromBinary(bytes, SERIALIZER.manifest(message)),
                    new String(bytes, StandardCharsets.UTF_8));
        }
    }

    @Test
    void onlyClusterMessagesAreReadFromTheWire() {
        assertThrows(NotSerializableException.class, () -> SERIALIZER.fromBinary("{}".getBytes(), "java.io.File"));
        assertThrows(NotSerializableException.class, () -> SERIALIZER.fromBinary("{}".getBytes(), "no.such.Type"));
        assertThrows(IllegalArgumentException.class, () -> SERIALIZER.toBinary("a string"));
    }
}
