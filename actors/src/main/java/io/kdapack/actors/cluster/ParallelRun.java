package io.kdapack.actors.cluster;

import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankRunner;
import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.JobEvent;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.training.StepResult;
import io.kdapack.training.StepTiming;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * One run of a data-parallel job ({@code train.data_parallel = N > 1}), on the worker of rank 0, as a child of its
 * {@link WorkerAgent}: it has every chosen worker spawn its {@link RankRunner} ({@link WorkerAgent.SpawnRank}), tells
 * every rank the {@link RankRunner.Peers}, and turns the ranks' {@link RankEvent}s into the job's events and status
 * exactly as a single-JVM run has them: rank 0's steps (with its gradient bytes and exchange time), appended to the job's {@code events.jsonl} and then published on
 * the {@link EventTopic}; one end event when every rank has ended.
 *
 * <p>End: {@code succeeded} when all N ranks finished; {@code cancelled} after {@link Cancel} (every rank is told
 * {@link RankRunner.Stop} and ends after the step under way); else {@code failed} with the first rank's reason (a peer
 * terminated or silent beyond {@code kdapack.parallel.timeout}, a data or checkpoint error). The end is written only
 * once every rank has reported its end or its runner has terminated (a rank on a member that died counts as ended once
 * the member is removed), so a resume never meets a rank of the previous run still training.
 */
final class ParallelRun extends AbstractBehavior<Object> {

    /** Cancel the run (the reply is the status at once; the end event follows when the ranks have stopped). */
    record Cancel(ActorRef<RunReply> replyTo) {
    }

    private record Spawned(int rank, WorkerAgent.RankSpawned spawned, Throwable failure) {
    }

    private final String jobId;
    private final List<ActorRef<WorkerAgent.Command>> workers;
    private final ActorRef<RunReply> startedTo;
    private final ActorRef<Topic.Command<JobEventMessage>> topic;
    private final ActorRef<JobStatus> statusTo;
    private final Path journalFile;
    private final List<ActorRef<RankRunner.Command>> ranks;
    private final Set<Integer> ended = new HashSet<>();
    private final Duration spawnTimeout;
    private EventJournal journal;
    private JobStatus status;
    private String failure;
    private boolean cancelled;

    /**
     * @param workers    the run's workers, rank 0 (this member) first
     * @param totalSteps the job's {@code train.steps}
     * @param journal    the job's {@code events.jsonl} in the shared jobs directory
     * @param startedTo  gets the run's status once every rank is spawned, or the refusal
     * @param statusTo   gets every status change (the worker agent answers status questions from it)
     */
    static Behavior<Object> create(String jobId, List<ActorRef<WorkerAgent.Command>> workers, long totalSteps,
                                   Path journal, Duration spawnTimeout, ActorRef<RunReply> startedTo,
                                   ActorRef<Topic.Command<JobEventMessage>> topic, ActorRef<JobStatus> statusTo) {
        return Behaviors.setup(context -> new ParallelRun(context, jobId, workers, totalSteps, journal, spawnTimeout,
                startedTo, topic, statusTo));
    }

    private ParallelRun(ActorContext<Object> context, String jobId, List<ActorRef<WorkerAgent.Command>> workers,
                        long totalSteps, Path journal, Duration spawnTimeout, ActorRef<RunReply> startedTo,
                        ActorRef<Topic.Command<JobEventMessage>> topic, ActorRef<JobStatus> statusTo) {
        super(context);
        this.jobId = jobId;
        this.workers = List.copyOf(workers);
        this.startedTo = startedTo;
        this.topic = topic;
        this.statusTo = statusTo;
        this.journalFile = journal;
        this.spawnTimeout = spawnTimeout;
        this.ranks = new ArrayList<>(Collections.nCopies(workers.size(), (ActorRef<RankRunner.Command>) null));
        this.status = new JobStatus(jobId, JobState.STARTING, 0, totalSteps, null, Instant.now(), null, null);
        statusTo.tell(status);
        ActorRef<RankEvent> listener = context.getSelf().narrow();
        for (int r = 0; r < workers.size(); r++) {
            int rank = r;
            context.ask(WorkerAgent.RankSpawned.class, workers.get(r), spawnTimeout,
                    ref -> new WorkerAgent.SpawnRank(jobId, rank, listener, ref),
                    (spawned, failure) -> new Spawned(rank, spawned, failure));
        }
    }

    @Override
    public Receive<Object> createReceive() {
        return newReceiveBuilder()
                .onMessage(Spawned.class, this::onSpawned)
                .onMessage(RankEvent.Started.class, this::onStarted)
                .onMessage(RankEvent.StepDone.class, this::onStepDone)
                .onMessage(RankEvent.CheckpointWritten.class, this::onCheckpointWritten)
                .onMessage(RankEvent.Finished.class, finished -> rankEnded(finished.rank(), null))
                .onMessage(RankEvent.Failed.class, failed -> rankEnded(failed.rank(),
                        "rank " + failed.rank() + " on " + member(failed.rank()) + ": " + failed.reason()))
                .onMessage(Cancel.class, this::onCancel)
                .onSignal(Terminated.class, this::onRankTerminated)
                .build();
    }

    private Behavior<Object> onSpawned(Spawned spawned) {
        if (ranks.get(spawned.rank()) != null) {
            return this;
        }
        String refused = spawned.failure() != null
                ? "worker " + member(spawned.rank()) + " did not spawn rank " + spawned.rank() + " within "
                        + spawnTimeout.toSeconds() + " s"
                : spawned.spawned().runner() == null ? spawned.spawned().refusal().message() : null;
        if (refused != null) {
            failure = refused;
            ranks.stream().filter(r -> r != null).forEach(r -> r.tell(new RankRunner.Stop("the run did not start")));
            int code = spawned.spawned() != null && spawned.spawned().refusal() != null
                    ? spawned.spawned().refusal().status() : 503;
            String field = spawned.spawned() != null && spawned.spawned().refusal() != null
                    ? spawned.spawned().refusal().field() : null;
            startedTo.tell(RunReply.refused(new RunRefused(code, "job " + jobId + ": " + refused, field)));
            return Behaviors.stopped();
        }
        ranks.set(spawned.rank(), spawned.spawned().runner());
        getContext().watch(spawned.spawned().runner());
        if (ranks.contains(null)) {
            return this;
        }
        try {
            journal = EventJournal.open(journalFile, status.totalSteps());
        } catch (IOException e) {
            ranks.forEach(r -> r.tell(new RankRunner.Stop("the job's journal cannot be opened")));
            startedTo.tell(RunReply.refused(new RunRefused(500, "job " + jobId + ": cannot open its journal "
                    + journalFile + ": " + e.getMessage(), null)));
            failure = "journal";
            return Behaviors.stopped();
        }
        RankRunner.Peers peers = new RankRunner.Peers(ranks);
        ranks.forEach(r -> r.tell(peers));
        startedTo.tell(RunReply.of(status));
        return this;
    }

    private Behavior<Object> onStarted(RankEvent.Started event) {
        if (event.rank() == 0) {
            setStatus(new JobStatus(jobId, JobState.RUNNING, event.fromStep(), status.totalSteps(), status.lastLoss(),
                    status.startedAt(), null, null));
        }
        return this;
    }

    /** Rank 0's steps are the job's (the results are the same bits on every rank). */
    private Behavior<Object> onStepDone(RankEvent.StepDone event) {
        if (event.rank() != 0) {
            return this;
        }
        StepResult r = event.result();
        StepTiming timing = event.timing();
        record(new StepEvent(r.step(), r.loss(), r.mtpLoss(), r.tokens(), r.segments(), r.gradNorm(), r.lr(),
                r.tokensPerS(), r.valLoss(), r.valMtpLoss(), timing.bytesSent() + timing.bytesReceived(),
                timing.exchangeNanos() / 1e9));
        setStatus(new JobStatus(jobId, JobState.RUNNING, r.step(), status.totalSteps(), r.loss(), status.startedAt(),
                null, null));
        return this;
    }

    private Behavior<Object> onCheckpointWritten(RankEvent.CheckpointWritten event) {
        try {
            journal.sync();
        } catch (IOException e) {
            getContext().getLog().warn("job {}: cannot sync its journal: {}", jobId, e.toString());
        }
        return this;
    }

    private Behavior<Object> onCancel(Cancel cancel) {
        if (!status.state().isTerminal() && !cancelled) {
            cancelled = true;
            ranks.stream().filter(r -> r != null).forEach(r -> r.tell(new RankRunner.Stop("cancelled")));
        }
        cancel.replyTo().tell(RunReply.of(status));
        return this;
    }

    private Behavior<Object> onRankTerminated(Terminated terminated) {
        int rank = ranks.indexOf(terminated.getRef());
        return ended.contains(rank) ? this
                : rankEnded(rank, "rank " + rank + " on " + member(rank) + " terminated before reporting its end");
    }

    /** @param why null for a rank that completed the run */
    private Behavior<Object> rankEnded(int rank, String why) {
        if (rank < 0 || !ended.add(rank)) {
            return this;
        }
        if (why != null && failure == null) {
            failure = why;
            ranks.stream().filter(r -> r != null).forEach(r -> r.tell(new RankRunner.Stop(why)));
        }
        if (ended.size() < ranks.size()) {
            return this;
        }
        JobState state = cancelled ? JobState.CANCELLED : failure == null ? JobState.SUCCEEDED : JobState.FAILED;
        String error = state == JobState.FAILED ? failure : null;
        // The status first: whoever sees the end event and then asks gets the end.
        setStatus(new JobStatus(jobId, state, status.step(), status.totalSteps(), status.lastLoss(),
                status.startedAt(), Instant.now(), error));
        record(new EndEvent(state, status.step(), error));
        try {
            journal.close();
        } catch (IOException e) {
            getContext().getLog().warn("job {}: cannot close its journal: {}", jobId, e.toString());
        }
        return Behaviors.stopped();
    }

    /** Appends to the journal, then publishes (a stream fills what the topic lost from the journal). */
    private void record(JobEvent event) {
        boolean fresh;
        try {
            fresh = journal.append(event);
        } catch (IOException | RuntimeException e) {
            // A journal that cannot take the event (a disk error, a step missing before it) must not stop the run.
            getContext().getLog().warn("job {}: cannot append to its journal: {}", jobId, e.toString());
            fresh = true;
        }
        if (fresh) {
            topic.tell(Topic.publish(JobEventMessage.of(jobId, event)));
        }
    }

    private void setStatus(JobStatus next) {
        status = next;
        statusTo.tell(next);
    }

    private String member(int rank) {
        return rank < 0 || rank >= workers.size() ? "?" : workers.get(rank).path().address().toString();
    }
}
