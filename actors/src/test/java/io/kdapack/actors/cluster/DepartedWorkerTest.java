package io.kdapack.actors.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.cluster.InProcessMembers.ScriptedJobs;
import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.actors.job.MetricsHub;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.apache.pekko.cluster.typed.Leave;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job whose worker member has left the cluster, or cannot answer, is answered from what the api member knows, at
 * once, never after an ask to that member times out ({@link ClusterJobManager#WORKER_ANSWER}, 5 s). Three actor systems
 * in this JVM on loopback Artery with the cluster's own settings: an api member (the {@link JobDirectory}, the
 * {@link ClusterJobManager}) and two workers ({@link WorkerAgent} over scripted {@link LocalJobs}).
 *
 * <p>A job ends {@code stopped} and its worker then leaves (as {@code kdapack serve} does on SIGTERM: its jobs
 * checkpoint, then it leaves); once it is removed the directory has the placement as lost, and a status
 * ({@code GET /v1/jobs/{id}}, which {@code DELETE}, {@code resume} and {@code /events} read first) and a cancellation
 * answer the end within {@link #PROMPT}. A job ends {@code succeeded} and its worker then crashes (its system stops
 * without leaving, as after {@code kill -9}): while it is unreachable and not yet removed (the directory's placement is
 * not lost), the status is still answered within {@link #PROMPT}, and a cancellation of a third job, still running
 * there, is refused with a 503 naming the member within {@link #PROMPT} (it used to wait out the ask and reply empty,
 * which the HTTP layer answered 404 "no job"); then it is downed (as the split brain resolver does) and removed, the
 * third job is failed, and status, cancellation and the list answer at once. Each of the two fixes is needed: without the
 * directory's the leave fails (placement not lost), without the api member's own check the crash fails (5.02 s); the
 * code before both took 5.03 s for the first status.
 *
 * <p>About 15 s plus the first actor system's start in a fresh JVM (7 s on a loaded 2-core machine): a leave, the
 * failure detector's 3 s and a removal after downing are Pekko's own times.
 */
@Timeout(120)
class DepartedWorkerTest {

    /**
     * The longest an answer about a departed worker's job may take: well under the 5 s ask timeout it used to wait
     * for, and far above an in-JVM round trip (milliseconds), so that a loaded CI machine does not fail it.
     */
    private static final Duration PROMPT = ClusterJobManager.WORKER_ANSWER.dividedBy(2);
    private static final Duration WAIT = Duration.ofSeconds(30);
    /**
     * The split brain resolver's stable-after: longer than the test takes from the crash to its own {@code Down}, so
     * that the resolver decides nothing (with one member on each side it might down the api member).
     */
    private static final long STABLE_AFTER_MS = 120_000;

    @TempDir
    Path dir;

    /** A worker member: its system, its scripted jobs, and the agent's subscription to its job manager's events. */
    private record Worker(ActorSystem<Void> system, ScriptedJobs jobs, ActorRef<MetricsHub.Published> events) {
        Address address() {
            return Cluster.get(system).selfMember().address();
        }

        /** The run ends as the worker's job manager would end it: its status, then the end event. */
        void end(String jobId, JobState state, long step) {
            JobStatus running = jobs.runs().get(jobId);
            jobs.runs().put(jobId, new JobStatus(jobId, state, step, 10, 1.5, running.startedAt(), Instant.now(), null));
            events.tell(new MetricsHub.Published(jobId, new EndEvent(state, step, null)));
        }
    }

    @Test
    void aJobWhoseWorkerLeftOrWasDownedAnswersAtOnceFromWhatIsKnown() throws Exception {
        List<ActorSystem<Void>> systems = new ArrayList<>();
        try {
            ActorSystem<Void> api = ActorSystem.create(Behaviors.empty(), ClusterNode.SYSTEM_NAME, config("api"));
            systems.add(api);
            InProcessMembers.ApiJobs apiJobs = InProcessMembers.apiJobs(api, dir, WAIT);
            ActorRef<JobDirectory.Command> directory = apiJobs.directory();
            ActorRef<JobManager.Command> manager = apiJobs.manager();
            List<Worker> workers = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), ClusterNode.SYSTEM_NAME, workerConfig());
                systems.add(system);
                TestProbe<JobManager.Command> localManager = TestProbe.create(system);
                ActorRef<Topic.Command<JobEventMessage>> topic = system.systemActorOf(EventTopic.create(), "job-events",
                        Props.empty());
                ScriptedJobs jobs = new ScriptedJobs(dir);
                system.systemActorOf(WorkerAgent.create(jobs, localManager.getRef(), topic, WAIT), "worker",
                        Props.empty());
                JobManager.SubscribeEvents subscription = localManager.expectMessageClass(
                        JobManager.SubscribeEvents.class, WAIT);
                workers.add(new Worker(system, jobs, subscription.subscriber()));
            }
            InProcessMembers.join(systems, WAIT);
            awaitWorkersListed(api, workers.size());

            // Two jobs at once go to two workers (fewest runs first).
            String leaves = "j-leaves";
            String downed = "j-downed";
            Worker leaving = workerOf(start(api, manager, leaves), workers, directory, api, leaves);
            Worker downing = workerOf(start(api, manager, downed), workers, directory, api, downed);
            assertTrue(leaving != downing, "two jobs at once on two workers");

            // The first ends stopped (the checkpoint of a SIGTERM), the second succeeded, while their workers are up.
            endUntilKnown(leaving, leaves, JobState.STOPPED, 4, directory, api);
            endUntilKnown(downing, downed, JobState.SUCCEEDED, 10, directory, api);

            // The first worker leaves the cluster and stops (what kdapack serve does on SIGTERM).
            Address leftAddress = leaving.address();
            Cluster.get(leaving.system()).manager().tell(new Leave(leftAddress));
            awaitRemoved(api, leftAddress);
            leaving.system().getWhenTerminated().toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertAnsweredAtOnce(api, manager, directory, leaves, JobState.STOPPED, 4);
            // A third job, placed on the one worker left, runs on through its crash below.
            String cutOff = "j-cut-off";
            assertTrue(workerOf(start(api, manager, cutOff), workers, directory, api, cutOff) == downing,
                    "the third job on the worker left");

            // The second worker crashes (its system stops without leaving, as after kill -9): unreachable, not removed
            // (the resolver waits cluster.stable_after_ms, STABLE_AFTER_MS here), so the directory has not marked the placement lost and
            // only the api member's own view keeps the status from asking the dead member.
            Address downedAddress = downing.address();
            downing.system().terminate();
            downing.system().getWhenTerminated().toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
            awaitTrue(() -> Cluster.get(api).state().getUnreachable().stream()
                    .anyMatch(m -> m.address().equals(downedAddress)), downedAddress + " unreachable from the api member");
            assertStatusAtOnce(api, manager, downed, JobState.SUCCEEDED, 10);
            assertStatusAtOnce(api, manager, cutOff, JobState.RUNNING, 0);
            assertCancellationRefusedAtOnce(api, manager, cutOff, downedAddress);
            // Then it is downed, as the split brain resolver does, and removed.
            Cluster.get(api).manager().tell(new Down(downedAddress));
            awaitRemoved(api, downedAddress);
            assertAnsweredAtOnce(api, manager, directory, downed, JobState.SUCCEEDED, 10);

            TestProbe<List<JobHandle>> list = TestProbe.create(api);
            long asked = System.nanoTime();
            manager.tell(new JobManager.ListJobs(list.getRef()));
            List<JobHandle> all = list.receiveMessage(WAIT);
            long listMs = (System.nanoTime() - asked) / 1_000_000;
            assertEquals(JobState.FAILED, locate(directory, api, cutOff).known().state(),
                    "a run not ended on a removed worker is marked failed");
            assertEquals(List.of(JobState.STOPPED, JobState.SUCCEEDED, JobState.FAILED),
                    all.stream().map(h -> h.status().state()).toList(), all.toString());
            assertTrue(listMs < PROMPT.toMillis(), "the list answered after " + listMs + " ms");
        } finally {
            for (ActorSystem<Void> system : systems) {
                system.terminate();
            }
            for (ActorSystem<Void> system : systems) {
                system.getWhenTerminated().toCompletableFuture().completeOnTimeout(null, 20, TimeUnit.SECONDS).join();
            }
        }
    }

    /**
     * Once the job's worker is removed: the directory has its placement as lost, and a status and a cancellation answer
     * its end within {@link #PROMPT}, each asked twice (the first also builds the job's event mirror).
     */
    private static void assertAnsweredAtOnce(ActorSystem<?> api, ActorRef<JobManager.Command> manager,
                                             ActorRef<JobDirectory.Command> directory, String jobId, JobState end,
                                             long step) {
        awaitTrue(() -> locate(directory, api, jobId).lost(), "the directory has job " + jobId + "'s placement as lost");
        for (int i = 0; i < 2; i++) {
            assertStatusAtOnce(api, manager, jobId, end, step);
            TestProbe<StatusReply<Optional<JobStatus>>> cancelled = TestProbe.create(api);
            long asked = System.nanoTime();
            manager.tell(new JobManager.CancelJob(jobId, cancelled.getRef()));
            JobStatus afterCancel = cancelled.receiveMessage(WAIT).getValue().orElseThrow();
            long cancelMs = (System.nanoTime() - asked) / 1_000_000;
            assertEquals(end, afterCancel.state(), afterCancel.toString());
            assertTrue(cancelMs < PROMPT.toMillis(), "job " + jobId + "'s cancellation answered after " + cancelMs + " ms");
        }
    }

    /**
     * A cancellation of a running job whose worker is unreachable (not removed) is refused within {@link #PROMPT}: a 503
     * naming the member, never an empty reply (the HTTP layer's 404 "no job") after the ask timed out.
     */
    private static void assertCancellationRefusedAtOnce(ActorSystem<?> api, ActorRef<JobManager.Command> manager,
                                                        String jobId, Address unreachable) {
        TestProbe<StatusReply<Optional<JobStatus>>> cancelled = TestProbe.create(api);
        long asked = System.nanoTime();
        manager.tell(new JobManager.CancelJob(jobId, cancelled.getRef()));
        StatusReply<Optional<JobStatus>> reply = cancelled.receiveMessage(WAIT);
        long cancelMs = (System.nanoTime() - asked) / 1_000_000;
        assertTrue(reply.isError(), () -> "job " + jobId + "'s cancellation answered " + reply.getValue());
        RunRefused refused = assertInstanceOf(RunRefused.class, reply.getError());
        assertEquals(503, refused.status(), refused.getMessage());
        assertTrue(refused.getMessage().contains(unreachable.toString())
                        && refused.getMessage().toLowerCase(java.util.Locale.ROOT).contains("retry"),
                refused.getMessage());
        assertTrue(cancelMs < PROMPT.toMillis(), "job " + jobId + "'s cancellation answered after " + cancelMs + " ms");
    }

    private static void assertStatusAtOnce(ActorSystem<?> api, ActorRef<JobManager.Command> manager, String jobId,
                                           JobState end, long step) {
        TestProbe<Optional<JobHandle>> got = TestProbe.create(api);
        long asked = System.nanoTime();
        manager.tell(new JobManager.GetJob(jobId, got.getRef()));
        JobStatus status = got.receiveMessage(WAIT).orElseThrow().status();
        long statusMs = (System.nanoTime() - asked) / 1_000_000;
        assertEquals(end, status.state(), status.toString());
        assertEquals(step, status.step(), status.toString());
        assertTrue(statusMs < PROMPT.toMillis(), "job " + jobId + "'s status answered after " + statusMs + " ms");
    }

    /** Starts a job through the api member's manager, retried while the directory has not yet seen both workers. */
    private static JobStatus start(ActorSystem<?> api, ActorRef<JobManager.Command> manager, String jobId) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            TestProbe<StatusReply<JobStatus>> reply = TestProbe.create(api);
            manager.tell(new JobManager.StartJob(jobId, null, reply.getRef()));
            StatusReply<JobStatus> started = reply.receiveMessage(WAIT);
            if (started.isSuccess()) {
                return started.getValue();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("job " + jobId + " was not started: " + started.getError());
            }
            sleep(200);
        }
    }

    /**
     * Waits until the api member's Receptionist lists {@code n} worker agents: the directory, subscribed to it first,
     * then has them too, so that placement sees every worker (a submission before would place both jobs on one).
     */
    private static void awaitWorkersListed(ActorSystem<?> api, int n) {
        TestProbe<Receptionist.Listing> listings = TestProbe.create(api);
        api.receptionist().tell(Receptionist.subscribe(WorkerAgent.KEY, listings.getRef()));
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (listings.receiveMessage(WAIT).getServiceInstances(WorkerAgent.KEY).size() < n) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the Receptionist did not list " + n + " workers within " + WAIT.toSeconds() + " s");
            }
        }
        sleep(200); // the directory's copy of the listing is handled before the first submission reaches it
    }

    private static Worker workerOf(JobStatus started, List<Worker> workers, ActorRef<JobDirectory.Command> directory,
                                   ActorSystem<?> api, String jobId) {
        assertEquals(JobState.RUNNING, started.state(), started.toString());
        String member = locate(directory, api, jobId).members().getFirst();
        return workers.stream().filter(w -> w.address().toString().equals(member)).findFirst()
                .orElseThrow(() -> new AssertionError("job " + jobId + " placed on " + member));
    }

    /**
     * Ends the run on its worker, whose agent publishes the end on the topic: published again until the directory has
     * it (the topic delivers at most once, and a publish before the api member's subscription reached the worker is
     * lost).
     */
    private static void endUntilKnown(Worker worker, String jobId, JobState state, long step,
                                      ActorRef<JobDirectory.Command> directory, ActorSystem<?> api) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            worker.end(jobId, state, step);
            JobStatus known = locate(directory, api, jobId).known();
            if (known.state() == state) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the directory never heard job " + jobId + " end: " + known);
            }
            sleep(200);
        }
    }

    private static JobDirectory.Location locate(ActorRef<JobDirectory.Command> directory, ActorSystem<?> api,
                                                String jobId) {
        TestProbe<JobDirectory.Location> probe = TestProbe.create(api);
        directory.tell(new JobDirectory.Locate(jobId, probe.getRef()));
        JobDirectory.Location location = probe.receiveMessage(WAIT);
        assertNotNull(location.known(), () -> "job " + jobId + " is not placed");
        return location;
    }

    private static void awaitRemoved(ActorSystem<?> api, Address member) {
        awaitTrue(() -> memberAt(api, member).isEmpty(), member + " removed from the api member's view");
    }

    private static Optional<Member> memberAt(ActorSystem<?> api, Address address) {
        for (Member m : Cluster.get(api).state().getMembers()) {
            if (m.address().equals(address)) {
                return Optional.of(m);
            }
        }
        return Optional.empty();
    }

    private static void awaitTrue(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + WAIT.toSeconds() + " s: " + what);
            }
            sleep(50);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * A worker's settings: a {@code terminate()} stops the system at once, as a crash does (no leave); leaving the
     * cluster is asked for explicitly, and its removal then stops the system as {@code kdapack serve} stops.
     */
    private static Config workerConfig() {
        return ConfigFactory.parseString("pekko.coordinated-shutdown.run-by-actor-system-terminate = off")
                .withFallback(config("worker"));
    }

    private static Config config(String role) {
        return InProcessMembers.config(role, STABLE_AFTER_MS);
    }
}
