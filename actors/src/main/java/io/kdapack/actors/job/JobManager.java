package io.kdapack.actors.job;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.MemoryEstimate;
import io.kdapack.training.pipeline.PipelineSettings;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.WeightSnapshot;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.pattern.StatusReply;

/**
 * The jobs of one server: starts each run under its own {@link JobSupervisor} (so a failing job never
 * touches another), keeps every job's latest status and event history, and on shutdown asks running jobs
 * to checkpoint and stop. Finished jobs are kept up to a count, oldest dropped first.
 *
 * <p>Admission ({@link Admission}): a job whose {@link MemoryEstimate} alone exceeds the memory budget is refused
 * ({@link JobRefused.Reason#TOO_LARGE}); one that would take the running jobs past the budget, or past the number of
 * running jobs, waits in state {@link JobState#QUEUED}, first come first started; when the queue is full too it is
 * refused ({@link JobRefused.Reason#FULL}).
 */
public final class JobManager extends AbstractBehavior<JobManager.Command> {

    /** Job ids double as actor names and URL path segments. */
    public static final Pattern JOB_ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");

    public sealed interface Command permits StartJob, GetJob, ListJobs, CancelJob, Evaluate, SnapshotWeights, StopAll,
            SubscribeEvents, GetCapacity, DescribeCluster, JobUpdated, SupervisorStopped, SnapshotAnswered, Purge, PurgeDone {
    }

    /**
     * Start a new job, or a new run of a resumable job with the same id.
     *
     * @param journal the job's {@link EventJournal} file (its history is read back from it and the run's events
     *                appended), or null to keep the run's events in memory only
     */
    public record StartJob(String jobId, TrainingBackend backend, Path journal,
                           ActorRef<StatusReply<JobStatus>> replyTo) implements Command {
        public StartJob(String jobId, TrainingBackend backend, ActorRef<StatusReply<JobStatus>> replyTo) {
            this(jobId, backend, null, replyTo);
        }
    }

    public record GetJob(String jobId, ActorRef<Optional<JobHandle>> replyTo) implements Command {
    }

    public record ListJobs(ActorRef<List<JobHandle>> replyTo) implements Command {
    }

    /**
     * Cancel a running job; replies its status (empty if unknown). The job stops within one step. An error reply says
     * the cancellation could not be delivered now (a cluster's api member: {@link io.kdapack.actors.cluster.RunRefused}
     * with the HTTP status, e.g. 503 while the job's worker is unreachable); this manager never replies one.
     */
    public record CancelJob(String jobId, ActorRef<StatusReply<Optional<JobStatus>>> replyTo) implements Command {
    }

    /**
     * Forget a job that is not running or queued (its status and history), so that its files can be removed; refused
     * ({@link JobRefused.Reason#CONFLICT}) while a run is in progress. Replies its last status (empty if not known here).
     * Until {@link PurgeDone} the id cannot be started or resumed.
     */
    public record Purge(String jobId, ActorRef<StatusReply<Optional<JobStatus>>> replyTo) implements Command {
    }

    /** The files of a job that {@link Purge} forgot are gone (or their removal failed): its id may be used again. */
    public record PurgeDone(String jobId) implements Command {
    }

    /** Loss of a packed batch under a running job's current weights, while {@code ticket} is alive. */
    public record Evaluate(String jobId, MicroBatch batch, EvaluationTicket ticket,
                           ActorRef<StatusReply<BatchLoss>> replyTo) implements Command {
        public Evaluate(String jobId, MicroBatch batch, ActorRef<StatusReply<BatchLoss>> replyTo) {
            this(jobId, batch, EvaluationTicket.UNBOUNDED, replyTo);
        }
    }

    /**
     * A copy of a running job's weights as of a step boundary, or {@link WeightSnapshot#unchanged}
     * when they are still those of {@code unlessStep} (-1: always copy); errors are {@link EvaluationRefused}
     * ({@code UNKNOWN_JOB}, {@code NOT_RUNNING}: ended, or no step applied yet).
     */
    public record SnapshotWeights(String jobId, long unlessStep,
                                  ActorRef<StatusReply<WeightSnapshot>> replyTo)
            implements Command {
    }

    /** Checkpoint and stop every running job, refuse new ones, reply when all have stopped. */
    public record StopAll(ActorRef<Done> replyTo) implements Command {
    }

    public record SubscribeEvents(ActorRef<MetricsHub.Published> subscriber) implements Command {
    }

    /** How many jobs run and wait against the admission limits (for readiness checks). */
    public record GetCapacity(ActorRef<Capacity> replyTo) implements Command {
    }

    /**
     * The cluster membership this server is part of ({@code GET /v1/cluster}); empty for a server that is not a
     * cluster member (this manager; {@link io.kdapack.actors.cluster.ClusterJobManager} answers it on api members).
     */
    public record DescribeCluster(ActorRef<Optional<io.kdapack.actors.cluster.ClusterView>> replyTo)
            implements Command {
    }

    /**
     * @param running      jobs with a run in progress
     * @param queued       jobs waiting to start
     * @param shuttingDown the manager refuses new jobs for good
     */
    public record Capacity(int running, int queued, long reservedBytes, Admission admission, boolean shuttingDown) {
        /** Whether a new job would be accepted (started or queued), size aside. */
        public boolean canTakeWork() {
            return !shuttingDown && (running < admission.maxRunning() || queued < admission.maxQueued());
        }
    }

    private record JobUpdated(JobStatus status) implements Command {
    }

    private record SupervisorStopped(String jobId, ActorRef<JobSupervisor.Command> supervisor) implements Command {
    }

    /** A job's answer to the snapshot request {@code requestId} (or the ask's failure). */
    private record SnapshotAnswered(long requestId, StatusReply<WeightSnapshot> reply,
                                    Throwable failure) implements Command {
    }

    /** A snapshot request handed to a job's supervisor and not answered yet. */
    private record PendingSnapshot(String jobId,
                                   ActorRef<StatusReply<WeightSnapshot>> replyTo) {
    }

    /**
     * How long a job may take to answer a snapshot: it is taken between two steps on the model's thread, so a step's
     * time at most; a job that ends first is answered {@code NOT_RUNNING} when its supervisor stops, not after this.
     */
    private static final Duration SNAPSHOT_ANSWER = Duration.ofMinutes(10);

    /**
     * A job's current run; {@code supervisor} is null while it is queued and once the run has ended, {@code backend}
     * is kept only while it is queued.
     */
    private record Job(JobHandle handle, ActorRef<JobSupervisor.Command> supervisor, TrainingBackend backend,
                       long reservedBytes) {
        Job withStatus(JobStatus status) {
            return new Job(new JobHandle(status, handle.events(), handle.gauges()), supervisor, backend, reservedBytes);
        }

        Job ended() {
            return new Job(handle, null, null, 0);
        }

        boolean running() {
            return supervisor != null && !handle.status().state().isTerminal();
        }
    }

    private final PipelineSettings settings;
    private final int retainFinished;
    private final Admission admission;
    private final Queue<String> queued = new ArrayDeque<>();
    private final ActorRef<MetricsHub.Command> hub;
    private final ActorRef<JobStatus> statusAdapter;
    private final Map<String, Job> jobs = new LinkedHashMap<>();
    private final Queue<String> finishedOrder = new ArrayDeque<>();
    private final List<ActorRef<Done>> stopWaiters = new ArrayList<>();
    /** Jobs whose files are being removed ({@link Purge}): they cannot start until {@link PurgeDone}. */
    private final Set<String> purging = new HashSet<>();
    /**
     * Snapshot requests in flight, by request id: a job that ends before its model takes the snapshot drops the
     * request with its stages, so they are answered when its supervisor stops.
     */
    private final Map<Long, PendingSnapshot> pendingSnapshots = new HashMap<>();
    private long snapshotRequests;
    private boolean shuttingDown;
    private long runs;

    /**
     * @param settings       pipeline settings of every job
     * @param retainFinished finished jobs whose status and history are kept
     */
    public static Behavior<Command> create(PipelineSettings settings, int retainFinished) {
        return create(settings, retainFinished, Admission.UNLIMITED);
    }

    /** As {@link #create(PipelineSettings, int)}, admitting jobs within {@code admission}. */
    public static Behavior<Command> create(PipelineSettings settings, int retainFinished, Admission admission) {
        if (retainFinished < 0) {
            throw new IllegalArgumentException("retainFinished must be >= 0, got " + retainFinished);
        }
        return Behaviors.setup(context -> new JobManager(context, settings, retainFinished, admission));
    }

    private JobManager(ActorContext<Command> context, PipelineSettings settings, int retainFinished,
                       Admission admission) {
        super(context);
        this.settings = settings;
        this.retainFinished = retainFinished;
        this.admission = admission;
        // A bad event must not end pub/sub for every job: the hub resumes after a failure.
        this.hub = context.spawn(Behaviors.supervise(MetricsHub.create()).onFailure(SupervisorStrategy.resume()),
                "metrics-hub");
        this.statusAdapter = context.messageAdapter(JobStatus.class, JobUpdated::new);
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(StartJob.class, this::onStartJob)
                .onMessage(GetJob.class, this::onGetJob)
                .onMessage(ListJobs.class, this::onListJobs)
                .onMessage(CancelJob.class, this::onCancelJob)
                .onMessage(Evaluate.class, this::onEvaluate)
                .onMessage(SnapshotWeights.class, this::onSnapshotWeights)
                .onMessage(StopAll.class, this::onStopAll)
                .onMessage(SubscribeEvents.class, this::onSubscribeEvents)
                .onMessage(GetCapacity.class, this::onGetCapacity)
                .onMessage(DescribeCluster.class, this::onDescribeCluster)
                .onMessage(JobUpdated.class, this::onJobUpdated)
                .onMessage(SupervisorStopped.class, this::onSupervisorStopped)
                .onMessage(SnapshotAnswered.class, this::onSnapshotAnswered)
                .onMessage(Purge.class, this::onPurge)
                .onMessage(PurgeDone.class, done -> {
                    purging.remove(done.jobId());
                    return this;
                })
                .build();
    }

    private Behavior<Command> onStartJob(StartJob start) {
        String id = start.jobId();
        Job existing = jobs.get(id);
        String refusal = shuttingDown ? "the server is shutting down"
                : !JOB_ID.matcher(id).matches() ? "job id must match " + JOB_ID.pattern() + ", got '" + id + "'"
                : purging.contains(id) ? beingPurged(id)
                : existing == null ? null
                : !existing.handle().status().state().isTerminal() ? "job " + id + " is still running"
                : !existing.handle().status().state().isResumable() ? "job " + id + " has "
                        + existing.handle().status().state().name().toLowerCase() + "; nothing to resume"
                : null;
        if (refusal != null) {
            start.replyTo().tell(StatusReply.error(new JobRefused(JobRefused.Reason.CONFLICT, refusal, null)));
            return this;
        }
        long totalSteps;
        long resumeStep;
        MemoryEstimate estimate;
        try {
            totalSteps = start.backend().plan().totalSteps();
            resumeStep = start.backend().resumeStep();
            estimate = start.backend().memoryEstimate();
        } catch (IOException | RuntimeException e) {
            start.replyTo().tell(StatusReply.error("the job's training plan is unavailable: " + e.getMessage()));
            return this;
        }
        if (estimate.bytes() > admission.memoryBudget()) {
            start.replyTo().tell(StatusReply.error(new JobRefused(JobRefused.Reason.TOO_LARGE, "the job needs about "
                    + MemoryEstimate.format(estimate.bytes()) + " of memory (" + estimate.explanation()
                    + "), more than the server's memory budget of " + MemoryEstimate.format(admission.memoryBudget())
                    + " (server.memory_budget)", estimate.largestKey())));
            return this;
        }
        boolean startsNow = queued.isEmpty() && fitsNow(estimate.bytes());
        if (!startsNow && queued.size() >= admission.maxQueued()) {
            start.replyTo().tell(StatusReply.error(new JobRefused(JobRefused.Reason.FULL, "the server is at capacity: "
                    + runningCount() + " jobs running (server.max_running_jobs = " + admission.maxRunning() + ") and "
                    + queued.size() + " waiting (server.max_queued_jobs = " + admission.maxQueued()
                    + "); try again later", null)));
            return this;
        }
        EventJournal journal = null;
        JobEventLog events = new JobEventLog(totalSteps);
        if (start.journal() != null) {
            try {
                journal = EventJournal.open(start.journal(), totalSteps);
                events = journal.log();
            } catch (IOException | RuntimeException e) {
                start.replyTo().tell(StatusReply.error(new JobRefused(JobRefused.Reason.CONFLICT,
                        "cannot open the job's event journal " + start.journal() + ": " + e.getMessage(), null)));
                return this;
            }
        }
        finishedOrder.remove(id);
        hub.tell(new MetricsHub.Register(id, events, journal));
        JobHandle handle = new JobHandle(JobStatus.queued(id, resumeStep, totalSteps), events, new PipelineGauges());
        Job job = new Job(handle, null, start.backend(), estimate.bytes());
        if (startsNow) {
            job = launch(id, job);
        } else {
            queued.add(id);
        }
        jobs.put(id, job);
        start.replyTo().tell(StatusReply.success(job.handle().status()));
        return this;
    }

    /** Spawns the run's supervisor; the supervisor's first status (STARTING) follows, shown here until then. */
    private Job launch(String id, Job job) {
        JobHandle handle = job.handle();
        ActorRef<JobSupervisor.Command> supervisor = getContext().spawn(
                JobSupervisor.create(id, job.backend(), handle.status().step(), settings, hub, statusAdapter,
                        handle.gauges()), "job-" + id + "-" + (++runs));
        getContext().watchWith(supervisor, new SupervisorStopped(id, supervisor));
        JobStatus starting = JobStatus.starting(id, handle.status().step(), handle.status().totalSteps(), Instant.now());
        return new Job(new JobHandle(starting, handle.events(), handle.gauges()), supervisor, null,
                job.reservedBytes());
    }

    private boolean fitsNow(long bytes) {
        return runningCount() < admission.maxRunning() && reservedBytes() + bytes <= admission.memoryBudget();
    }

    private int runningCount() {
        return (int) jobs.values().stream().filter(Job::running).count();
    }

    private long reservedBytes() {
        return jobs.values().stream().filter(Job::running).mapToLong(Job::reservedBytes).sum();
    }

    /** Starts waiting jobs in arrival order while the first of them fits. */
    private void startQueued() {
        while (!shuttingDown && !queued.isEmpty()) {
            String id = queued.peek();
            Job job = jobs.get(id);
            if (!fitsNow(job.reservedBytes())) {
                return;
            }
            queued.remove();
            jobs.put(id, launch(id, job));
        }
    }

    /** Ends a job that never started: its status and its event log get the terminal state. */
    private void endQueued(String id, JobState state) {
        queued.remove(id);
        Job job = jobs.get(id);
        JobStatus ended = job.handle().status().finished(state, Instant.now(), null);
        jobs.put(id, job.ended());
        hub.tell(new MetricsHub.Publish(id, new EndEvent(state, 0, null)));
        onJobUpdated(new JobUpdated(ended));
    }

    private Behavior<Command> onGetCapacity(GetCapacity get) {
        get.replyTo().tell(new Capacity(runningCount(), queued.size(), reservedBytes(), admission, shuttingDown));
        return this;
    }

    /** A single JVM is no cluster member. */
    private Behavior<Command> onDescribeCluster(DescribeCluster describe) {
        describe.replyTo().tell(Optional.empty());
        return this;
    }

    private Behavior<Command> onGetJob(GetJob get) {
        get.replyTo().tell(Optional.ofNullable(jobs.get(get.jobId())).map(Job::handle));
        return this;
    }

    private Behavior<Command> onListJobs(ListJobs list) {
        list.replyTo().tell(jobs.values().stream().map(Job::handle).toList());
        return this;
    }

    private Behavior<Command> onCancelJob(CancelJob cancel) {
        Job job = jobs.get(cancel.jobId());
        if (job != null && job.supervisor() != null) {
            job.supervisor().tell(new JobSupervisor.Cancel());
        } else if (job != null && job.handle().status().state() == JobState.QUEUED) {
            endQueued(cancel.jobId(), JobState.CANCELLED);
        }
        cancel.replyTo().tell(StatusReply.success(Optional.ofNullable(jobs.get(cancel.jobId()))
                .map(j -> j.handle().status())));
        return this;
    }

    /**
     * Why job {@code id} is not purged while it is {@code state} (running, queued, being started): the 409's message,
     * the same from a single server and from a cluster's directory and workers.
     */
    public static String notPurgedWhile(String id, String state) {
        return "job " + id + " is " + state + ": cancel it first (DELETE /v1/jobs/" + id + ") and purge it once it has "
                + "ended";
    }

    /** Why job {@code id} is neither started nor purged while its purge is under way: the 409's message. */
    public static String beingPurged(String id) {
        return "job " + id + " is being purged";
    }

    private Behavior<Command> onPurge(Purge purge) {
        String id = purge.jobId();
        Job job = jobs.get(id);
        if (job != null && !job.handle().status().state().isTerminal()) {
            purge.replyTo().tell(StatusReply.error(new JobRefused(JobRefused.Reason.CONFLICT,
                    notPurgedWhile(id, job.handle().status().state().name().toLowerCase()), null)));
            return this;
        }
        if (purging.contains(id)) {
            purge.replyTo().tell(StatusReply.error(new JobRefused(JobRefused.Reason.CONFLICT, beingPurged(id), null)));
            return this;
        }
        purging.add(id);
        if (job != null) {
            jobs.remove(id);
            finishedOrder.remove(id);
            hub.tell(new MetricsHub.Forget(id));
        }
        purge.replyTo().tell(StatusReply.success(Optional.ofNullable(job).map(j -> j.handle().status())));
        return this;
    }

    private Behavior<Command> onEvaluate(Evaluate evaluate) {
        Job job = jobs.get(evaluate.jobId());
        if (job == null) {
            evaluate.replyTo().tell(StatusReply.error(
                    new EvaluationRefused(EvaluationRefused.Reason.UNKNOWN_JOB, "no job " + evaluate.jobId())));
        } else if (job.supervisor() == null || job.handle().status().state().isTerminal()) {
            evaluate.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING,
                    "job " + evaluate.jobId() + " is not running")));
        } else {
            job.supervisor().tell(new JobSupervisor.Evaluate(evaluate.batch(), evaluate.ticket(), evaluate.replyTo()));
        }
        return this;
    }

    private Behavior<Command> onSnapshotWeights(SnapshotWeights snapshot) {
        Job job = jobs.get(snapshot.jobId());
        if (job == null) {
            snapshot.replyTo().tell(StatusReply.error(
                    new EvaluationRefused(EvaluationRefused.Reason.UNKNOWN_JOB, "no job " + snapshot.jobId())));
        } else if (!job.running()) {
            snapshot.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING,
                    "job " + snapshot.jobId() + " is not running")));
        } else {
            long requestId = ++snapshotRequests;
            pendingSnapshots.put(requestId, new PendingSnapshot(snapshot.jobId(), snapshot.replyTo()));
            @SuppressWarnings("unchecked")
            Class<StatusReply<WeightSnapshot>> replyClass =
                    (Class<StatusReply<WeightSnapshot>>) (Class<?>) StatusReply.class;
            getContext().ask(replyClass, job.supervisor(), SNAPSHOT_ANSWER,
                    replyTo -> new JobSupervisor.SnapshotWeights(snapshot.unlessStep(), replyTo),
                    (reply, failure) -> new SnapshotAnswered(requestId, reply, failure));
        }
        return this;
    }

    private Behavior<Command> onSnapshotAnswered(SnapshotAnswered answered) {
        PendingSnapshot pending = pendingSnapshots.remove(answered.requestId());
        if (pending != null) {
            pending.replyTo().tell(answered.failure() == null ? answered.reply() : StatusReply.error(
                    new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING, "job " + pending.jobId()
                            + " did not answer the snapshot: " + answered.failure().getMessage())));
        }
        return this;
    }

    private Behavior<Command> onStopAll(StopAll stop) {
        shuttingDown = true;
        stopWaiters.add(stop.replyTo());
        for (String id : List.copyOf(queued)) {
            endQueued(id, JobState.STOPPED); // never started: it stays resumable from its (absent) checkpoint
        }
        for (Job job : jobs.values()) {
            if (job.supervisor() != null && !job.handle().status().state().isTerminal()) {
                job.supervisor().tell(new JobSupervisor.CheckpointAndStop());
            }
        }
        replyIfAllStopped();
        return this;
    }

    private Behavior<Command> onSubscribeEvents(SubscribeEvents subscribe) {
        hub.tell(new MetricsHub.Subscribe(subscribe.subscriber()));
        return this;
    }

    private Behavior<Command> onJobUpdated(JobUpdated updated) {
        JobStatus status = updated.status();
        Job job = jobs.get(status.id());
        if (job == null) {
            return this;
        }
        Instant startedAt = job.handle().status().startedAt();
        jobs.put(status.id(), job.withStatus(startedAt == null ? status : status.withStartedAt(startedAt)));
        if (status.state().isTerminal()) {
            startQueued();
            finishedOrder.add(status.id());
            while (finishedOrder.size() > retainFinished) {
                String dropped = finishedOrder.remove();
                jobs.remove(dropped);
                hub.tell(new MetricsHub.Forget(dropped));
            }
            replyIfAllStopped();
        }
        return this;
    }

    /** A supervisor that stopped without reporting a terminal state crashed itself: record that. */
    private Behavior<Command> onSupervisorStopped(SupervisorStopped stopped) {
        Job job = jobs.get(stopped.jobId());
        if (job == null || !stopped.supervisor().equals(job.supervisor())) {
            return this;
        }
        jobs.put(stopped.jobId(), job.ended());
        pendingSnapshots.values().removeIf(pending -> {
            if (!pending.jobId().equals(stopped.jobId())) {
                return false;
            }
            pending.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING,
                    "job " + stopped.jobId() + " ended before its weights were copied")));
            return true;
        });
        if (!job.handle().status().state().isTerminal()) {
            getContext().getSelf().tell(new JobUpdated(job.handle().status().finished(JobState.FAILED,
                    Instant.now(), "job supervisor stopped unexpectedly")));
        }
        return this;
    }

    private void replyIfAllStopped() {
        if (stopWaiters.isEmpty()) {
            return;
        }
        boolean allStopped = jobs.values().stream().allMatch(job -> job.handle().status().state().isTerminal());
        if (allStopped) {
            stopWaiters.forEach(waiter -> waiter.tell(Done.getInstance()));
            stopWaiters.clear();
        }
    }
}
