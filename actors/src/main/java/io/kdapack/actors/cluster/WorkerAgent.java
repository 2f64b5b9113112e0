package io.kdapack.actors.cluster;

import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankRunner;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.actors.job.MetricsHub;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * A worker member's face to the cluster: registered with the Receptionist under {@link #KEY}, it starts, reports and
 * cancels runs on this member's own {@link JobManager} (through {@link LocalJobs}) for the {@link JobDirectory}, and
 * republishes every event of those runs on the {@link EventTopic}. The job runs exactly as in a single JVM: same
 * actors, same journal ({@code events.jsonl}) and checkpoints in the shared job directory.
 *
 * <p>Data-parallel runs ({@code train.data_parallel > 1}) do not go through the job manager: the agent of rank 0's
 * member coordinates one as a {@link ParallelRun} child ({@link StartParallel}), and every chosen member's agent spawns
 * that run's {@link RankRunner} as its own child ({@link SpawnRank}, so under {@code /system/worker}, a path
 * {@link io.kdapack.actors.cluster.parallel.ParallelTransport} lists as a large-message destination). The agent answers
 * status, list and cancel questions about such a run from the status its {@code ParallelRun} reports.
 */
public final class WorkerAgent extends AbstractBehavior<WorkerAgent.Command> {

    /** Every worker member's agent. */
    public static final ServiceKey<Command> KEY = ServiceKey.create(Command.class, "kdapack-worker");

    public sealed interface Command permits StartRun, StartParallel, SpawnRank, GetRun, ListRuns, CancelRun, PurgeRun,
            Event, SpecBuilt, ParallelStatus, RunStopped {
    }

    /**
     * Start a data-parallel run of the job on {@code workers} (this agent first, as rank 0): this member coordinates it
     * ({@link ParallelRun}); replies its status once every rank is spawned, or the refusal.
     */
    public record StartParallel(String jobId, List<ActorRef<Command>> workers, ActorRef<RunReply> replyTo)
            implements Command, ClusterMessage {
    }

    /** Spawn rank {@code rank} of the job on this member, reporting to {@code listener}; replies its runner. */
    public record SpawnRank(String jobId, int rank, ActorRef<RankEvent> listener, ActorRef<RankSpawned> replyTo)
            implements Command, ClusterMessage {
    }

    /** What {@link SpawnRank} answers: the runner, or why there is none (exactly one is not null). */
    public record RankSpawned(ActorRef<RankRunner.Command> runner, RunRefused.Refusal refusal) implements ClusterMessage {
    }

    private record SpecBuilt(SpawnRank request, RankSpec spec, Throwable failure) implements Command {
    }

    private record ParallelStatus(JobStatus status) implements Command {
    }

    /** A {@link ParallelRun} stopped: after its end, or refused before its ranks started (then nothing is kept). */
    private record RunStopped(String jobId) implements Command {
    }

    /** Start a run of the job (see {@link LocalJobs#start}); replies its status or the refusal. */
    public record StartRun(String jobId, ActorRef<RunReply> replyTo) implements Command, ClusterMessage {
    }

    /** The job's status here, or {@link RunReply#unknown()}. */
    public record GetRun(String jobId, ActorRef<RunReply> replyTo) implements Command, ClusterMessage {
    }

    /** Every job this member knows (running, queued, and the finished ones its manager keeps). */
    public record ListRuns(ActorRef<RunList> replyTo) implements Command, ClusterMessage {
    }

    public record CancelRun(String jobId, ActorRef<RunReply> replyTo) implements Command, ClusterMessage {
    }

    /**
     * Purge an ended run as a single server does ({@link LocalJobs#purge}); replies its last status, {@link RunReply#unknown}
     * when only its files were left, or the refusal (409 while it runs, 404 when neither this member nor the disk knows it).
     */
    public record PurgeRun(String jobId, ActorRef<RunReply> replyTo) implements Command, ClusterMessage {
    }

    /** What {@link ListRuns} answers: the statuses and who answered. */
    public record RunList(ActorRef<Command> worker, List<JobStatus> runs) implements ClusterMessage {
    }

    private record Event(MetricsHub.Published published) implements Command {
    }

    /** Ended data-parallel runs whose status this member keeps (as a job manager keeps its finished jobs). */
    static final int RETAIN_PARALLEL = 32;

    private final LocalJobs jobs;
    private final ActorRef<Topic.Command<JobEventMessage>> topic;
    private final ExchangeSettings exchange;
    private final Duration spawnTimeout;
    private final Executor blocking;
    private final ActorRef<JobStatus> parallelStatusTo;
    /** The data-parallel runs this member coordinates (rank 0 here), by job, and their newest status. */
    private final Map<String, ActorRef<Object>> parallelRuns = new LinkedHashMap<>();
    private final Map<String, JobStatus> parallelStatus = new LinkedHashMap<>();
    private long spawned;

    /**
     * @param manager      this member's job manager (its events are republished)
     * @param topic        this member's {@link EventTopic} actor
     * @param spawnTimeout longest the ranks of a data-parallel run may take to be spawned (each reads the job's record
     *                     and checks its dataset)
     */
    public static Behavior<Command> create(LocalJobs jobs, ActorRef<JobManager.Command> manager,
                                           ActorRef<Topic.Command<JobEventMessage>> topic, Duration spawnTimeout) {
        return Behaviors.setup(context -> new WorkerAgent(context, jobs, manager, topic, spawnTimeout));
    }

    private WorkerAgent(ActorContext<Command> context, LocalJobs jobs, ActorRef<JobManager.Command> manager,
                        ActorRef<Topic.Command<JobEventMessage>> topic, Duration spawnTimeout) {
        super(context);
        this.jobs = jobs;
        this.topic = topic;
        this.spawnTimeout = spawnTimeout;
        this.exchange = ExchangeSettings.from(context.getSystem().settings().config());
        this.blocking = context.getSystem().dispatchers().lookup(DispatcherSelector.blocking());
        this.parallelStatusTo = context.messageAdapter(JobStatus.class, ParallelStatus::new);
        manager.tell(new JobManager.SubscribeEvents(context.messageAdapter(MetricsHub.Published.class, Event::new)));
        context.getSystem().receptionist().tell(Receptionist.register(KEY, context.getSelf()));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(StartRun.class, this::onStartRun)
                .onMessage(StartParallel.class, this::onStartParallel)
                .onMessage(SpawnRank.class, this::onSpawnRank)
                .onMessage(SpecBuilt.class, this::onSpecBuilt)
                .onMessage(ParallelStatus.class, this::onParallelStatus)
                .onMessage(RunStopped.class, this::onRunStopped)
                .onMessage(GetRun.class, this::onGetRun)
                .onMessage(ListRuns.class, this::onListRuns)
                .onMessage(CancelRun.class, this::onCancelRun)
                .onMessage(PurgeRun.class, this::onPurgeRun)
                .onMessage(Event.class, this::onEvent)
                .build();
    }

    private Behavior<Command> onStartRun(StartRun start) {
        reply(jobs.start(start.jobId()), start.replyTo());
        return this;
    }

    private Behavior<Command> onStartParallel(StartParallel start) {
        String id = start.jobId();
        if (parallelRuns.containsKey(id)) {
            start.replyTo().tell(RunReply.refused(new RunRefused(409, "job " + id + " is running", null)));
            return this;
        }
        long totalSteps;
        try {
            totalSteps = jobs.totalSteps(id);
        } catch (RunRefused refused) {
            start.replyTo().tell(RunReply.refused(refused));
            return this;
        } catch (Exception e) {
            start.replyTo().tell(RunReply.refused(refusal(e)));
            return this;
        }
        ActorRef<Object> run = getContext().spawn(ParallelRun.create(id, start.workers(), totalSteps, jobs.journal(id),
                spawnTimeout, start.replyTo(), topic, parallelStatusTo), "parallel-" + id + "-" + (++spawned));
        getContext().watchWith(run, new RunStopped(id));
        parallelRuns.put(id, run);
        return this;
    }

    /** The rank's spec is built off the actor's thread (it reads the job's record and the dataset's index). */
    private Behavior<Command> onSpawnRank(SpawnRank request) {
        getContext().pipeToSelf(CompletableFuture.supplyAsync(() -> {
            try {
                return jobs.rankSpec(request.jobId(), request.rank(), exchange, request.listener());
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        }, blocking), (spec, failure) -> new SpecBuilt(request, spec, failure));
        return this;
    }

    private Behavior<Command> onSpecBuilt(SpecBuilt built) {
        SpawnRank request = built.request();
        if (built.failure() != null) {
            request.replyTo().tell(new RankSpawned(null, refusal(built.failure()).toRefusal()));
            return this;
        }
        ActorRef<RankRunner.Command> runner = getContext().spawn(RankRunner.create(built.spec()),
                "rank-" + request.jobId() + "-" + request.rank() + "-" + (++spawned));
        request.replyTo().tell(new RankSpawned(runner, null));
        return this;
    }

    private Behavior<Command> onParallelStatus(ParallelStatus update) {
        JobStatus status = update.status();
        parallelStatus.remove(status.id());
        parallelStatus.put(status.id(), status);
        if (status.state().isTerminal()) {
            parallelRuns.remove(status.id());
            List<String> ended = parallelStatus.values().stream().filter(s -> s.state().isTerminal())
                    .map(JobStatus::id).toList();
            for (int i = 0; i < ended.size() - RETAIN_PARALLEL; i++) {
                parallelStatus.remove(ended.get(i));
            }
        }
        return this;
    }

    private Behavior<Command> onRunStopped(RunStopped stopped) {
        parallelRuns.remove(stopped.jobId());
        JobStatus last = parallelStatus.get(stopped.jobId());
        if (last != null && !last.state().isTerminal()) {
            parallelStatus.remove(stopped.jobId());
        }
        return this;
    }

    private Behavior<Command> onGetRun(GetRun get) {
        if (parallelStatus.containsKey(get.jobId())) {
            get.replyTo().tell(RunReply.of(parallelStatus.get(get.jobId())));
            return this;
        }
        jobs.get(get.jobId()).whenComplete((status, failure) -> get.replyTo().tell(failure != null
                ? RunReply.refused(refusal(failure)) : status.map(RunReply::of).orElseGet(RunReply::unknown)));
        return this;
    }

    private Behavior<Command> onListRuns(ListRuns list) {
        ActorRef<Command> self = getContext().getSelf();
        List<JobStatus> parallel = List.copyOf(parallelStatus.values());
        jobs.list().whenComplete((runs, failure) -> {
            List<JobStatus> all = new ArrayList<>(parallel);
            (failure != null ? List.<JobStatus>of() : runs).stream()
                    .filter(r -> parallel.stream().noneMatch(p -> p.id().equals(r.id()))).forEach(all::add);
            list.replyTo().tell(new RunList(self, all));
        });
        return this;
    }

    private Behavior<Command> onCancelRun(CancelRun cancel) {
        ActorRef<Object> run = parallelRuns.get(cancel.jobId());
        if (run != null) {
            run.tell(new ParallelRun.Cancel(cancel.replyTo()));
            return this;
        }
        JobStatus ended = parallelStatus.get(cancel.jobId());
        if (ended != null) {
            cancel.replyTo().tell(RunReply.refused(new RunRefused(409, "job " + cancel.jobId() + " has ended ("
                    + ended.state().name().toLowerCase() + ")", null)));
            return this;
        }
        reply(jobs.cancel(cancel.jobId()), cancel.replyTo());
        return this;
    }

    private Behavior<Command> onPurgeRun(PurgeRun purge) {
        String id = purge.jobId();
        if (parallelRuns.containsKey(id)) {
            purge.replyTo().tell(RunReply.refused(new RunRefused(409, JobManager.notPurgedWhile(id, "running"), null)));
            return this;
        }
        // A data-parallel run's status is this agent's: forgotten here, its files removed by the local purge.
        Optional<JobStatus> parallelEnd = Optional.ofNullable(parallelStatus.remove(id));
        jobs.purge(id).whenComplete((status, failure) -> {
            RunReply reply;
            if (failure == null) {
                reply = status.or(() -> parallelEnd).map(RunReply::of).orElseGet(RunReply::unknown);
            } else if (parallelEnd.isPresent() && refusal(failure).status() == 404) {
                reply = RunReply.of(parallelEnd.get()); // known here only, its files already gone
            } else {
                reply = RunReply.refused(refusal(failure));
            }
            purge.replyTo().tell(reply);
        });
        return this;
    }

    private Behavior<Command> onEvent(Event event) {
        topic.tell(Topic.publish(JobEventMessage.of(event.published().jobId(), event.published().event())));
        return this;
    }

    private static void reply(CompletionStage<JobStatus> stage, ActorRef<RunReply> replyTo) {
        stage.whenComplete((status, failure) ->
                replyTo.tell(failure != null ? RunReply.refused(refusal(failure)) : RunReply.of(status)));
    }

    /** A refusal as it is; anything else is the member's own failure (500). */
    static RunRefused refusal(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                : failure;
        return cause instanceof RunRefused refused ? refused
                : new RunRefused(500, "worker failed: " + cause.getClass().getSimpleName() + ": " + cause.getMessage(),
                        null);
    }
}
