package io.kdapack.actors.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import io.kdapack.actors.cluster.InProcessMembers.ScriptedJobs;
import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.actors.job.MetricsHub;
import io.kdapack.config.ClusterConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code DELETE /v1/jobs/{id}?purge=true} on a cluster's api member: its {@link ClusterJobManager} has the
 * {@link JobDirectory} route the purge to the job's worker, which purges it as a single server does (scripted here:
 * its runs forget the job), and the directory forgets the placement and refuses the id until {@link JobManager.PurgeDone}.
 * Before, the api member had no handler for {@link JobManager.Purge}: no answer, the server's ask timed out. Two actor
 * systems in this JVM on loopback Artery (an api member and a worker); a few seconds beyond Pekko's start.
 */
@Timeout(60)
class ClusterPurgeTest {

    /** Far above an in-JVM round trip (milliseconds), far below the server's ask timeout. */
    private static final Duration PROMPT = Duration.ofSeconds(2);
    private static final Duration WAIT = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    @Test
    void aPurgeIsDoneByTheJobsWorkerAndTheIdIsHeldUntilItsFilesAreGone() throws Exception {
        ActorSystem<Void> api = ActorSystem.create(Behaviors.empty(), ClusterNode.SYSTEM_NAME, config("api"));
        ActorSystem<Void> worker = ActorSystem.create(Behaviors.empty(), ClusterNode.SYSTEM_NAME, config("worker"));
        try {
            InProcessMembers.ApiJobs apiJobs = InProcessMembers.apiJobs(api, dir, WAIT);
            ActorRef<JobDirectory.Command> directory = apiJobs.directory();
            ActorRef<JobManager.Command> manager = apiJobs.manager();
            ScriptedJobs jobs = new ScriptedJobs(dir);
            TestProbe<JobManager.Command> localManager = TestProbe.create(worker);
            worker.systemActorOf(WorkerAgent.create(jobs, localManager.getRef(), worker.systemActorOf(
                    EventTopic.create(), "job-events", Props.empty()), WAIT), "worker", Props.empty());
            ActorRef<MetricsHub.Published> events = localManager.expectMessageClass(JobManager.SubscribeEvents.class,
                    WAIT).subscriber();
            InProcessMembers.join(List.of(api, worker), WAIT);
            awaitWorkerListed(api);

            String id = "j-purged";
            assertEquals(JobState.RUNNING, start(api, manager, id).getValue().state());
            RunRefused running = refusal(purge(api, manager, id));
            assertEquals(409, running.status(), running.getMessage());
            assertTrue(running.getMessage().contains("cancel it first"), running.getMessage());
            assertTrue(jobs.runs().containsKey(id), "a running job is not purged");

            // The run ends on its worker (published until the directory has it: the topic delivers at most once).
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (locate(directory, api, id).known().state() != JobState.SUCCEEDED) {
                JobStatus was = jobs.runs().get(id);
                jobs.runs().put(id, new JobStatus(id, JobState.SUCCEEDED, 10, 10, 1.5, was.startedAt(), Instant.now(),
                        null));
                events.tell(new MetricsHub.Published(id, new EndEvent(JobState.SUCCEEDED, 10, null)));
                assertTrue(System.nanoTime() < deadline, "the directory never heard the job end");
                Thread.sleep(200);
            }

            long asked = System.nanoTime();
            StatusReply<Optional<JobStatus>> purged = purge(api, manager, id);
            long purgeMs = (System.nanoTime() - asked) / 1_000_000;
            assertTrue(purged.isSuccess(), () -> "the purge was refused: " + purged.getError());
            assertEquals(JobState.SUCCEEDED, purged.getValue().orElseThrow().state(), "the last status");
            assertTrue(purgeMs < PROMPT.toMillis(), "the purge answered after " + purgeMs + " ms");
            assertFalse(jobs.runs().containsKey(id), "the worker purged the job");
            assertFalse(locate(directory, api, id).placed(), "the directory forgot the placement");

            // Until the caller has removed the files and says so, the id is neither started nor purged again.
            StatusReply<JobStatus> during = start(api, manager, id);
            assertTrue(during.isError() && during.getError().getMessage().contains("being purged"), during.toString());
            assertTrue(refusal(purge(api, manager, id)).getMessage().contains("being purged"));
            manager.tell(new JobManager.PurgeDone(id));
            awaitStarted(api, manager, id);

            // A job the directory never placed (known only from its files, if at all) is the caller's to remove.
            StatusReply<Optional<JobStatus>> unknown = purge(api, manager, "j-files-only");
            assertTrue(unknown.isSuccess() && unknown.getValue().isEmpty(), unknown.toString());
        } finally {
            api.terminate();
            worker.terminate();
            for (ActorSystem<Void> system : List.of(api, worker)) {
                system.getWhenTerminated().toCompletableFuture().completeOnTimeout(null, 20, TimeUnit.SECONDS).join();
            }
        }
    }

    private static StatusReply<Optional<JobStatus>> purge(ActorSystem<?> api, ActorRef<JobManager.Command> manager,
                                                          String id) {
        TestProbe<StatusReply<Optional<JobStatus>>> reply = TestProbe.create(api);
        manager.tell(new JobManager.Purge(id, reply.getRef()));
        return reply.receiveMessage(WAIT);
    }

    private static RunRefused refusal(StatusReply<?> reply) {
        assertTrue(reply.isError(), () -> "expected a refusal, got " + reply.getValue());
        return assertInstanceOf(RunRefused.class, reply.getError());
    }

    private static StatusReply<JobStatus> start(ActorSystem<?> api, ActorRef<JobManager.Command> manager, String id) {
        TestProbe<StatusReply<JobStatus>> reply = TestProbe.create(api);
        manager.tell(new JobManager.StartJob(id, null, reply.getRef()));
        return reply.receiveMessage(WAIT);
    }

    /** The PurgeDone is told, not asked: a start may reach the directory first, so it is retried a short while. */
    private static void awaitStarted(ActorSystem<?> api, ActorRef<JobManager.Command> manager, String id)
            throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        StatusReply<JobStatus> started;
        while ((started = start(api, manager, id)).isError()) {
            assertTrue(System.nanoTime() < deadline, "not started after PurgeDone: " + started.getError());
            Thread.sleep(100);
        }
        assertEquals(JobState.RUNNING, started.getValue().state());
    }

    private static JobDirectory.Location locate(ActorRef<JobDirectory.Command> directory, ActorSystem<?> api, String id) {
        TestProbe<JobDirectory.Location> probe = TestProbe.create(api);
        directory.tell(new JobDirectory.Locate(id, probe.getRef()));
        return probe.receiveMessage(WAIT);
    }

    private static void awaitWorkerListed(ActorSystem<?> api) throws InterruptedException {
        TestProbe<Receptionist.Listing> listings = TestProbe.create(api);
        api.receptionist().tell(Receptionist.subscribe(WorkerAgent.KEY, listings.getRef()));
        while (listings.receiveMessage(WAIT).getServiceInstances(WorkerAgent.KEY).isEmpty()) {
            // the next listing
        }
        Thread.sleep(200); // the directory's copy of the listing is handled before the first submission reaches it
    }

    private static Config config(String role) {
        return InProcessMembers.config(role, ClusterConfig.defaults().stableAfterMs());
    }
}
