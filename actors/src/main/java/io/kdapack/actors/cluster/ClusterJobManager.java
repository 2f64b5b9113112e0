package io.kdapack.actors.cluster;

import io.kdapack.actors.job.Admission;
import io.kdapack.actors.job.EvaluationRefused;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.actors.job.MetricsHub;
import io.kdapack.actors.job.PipelineGauges;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.pattern.StatusReply;

/**
 * The job manager of an api member: it answers {@link JobManager}'s protocol, so the HTTP layer and its job service
 * work unchanged, but a job runs on a worker member. Starting asks the {@link JobDirectory} to place the run; a status
 * is asked of the job's worker (the directory says which); event histories are {@link EventMirrors} fed by the
 * {@link EventTopic}. Behaviour type {@code Object}: it takes {@link JobManager.Command}s from outside (the reference
 * handed out is narrowed to them) and its own private messages.
 *
 * <p>What differs from a single JVM: {@code StopAll} (this member shutting down) stops nothing, as the jobs belong to
 * the workers and go on; {@code POST /v1/steps} is refused (the weights live on the worker); a purge is done by the
 * job's worker ({@link #onPurge}); a cancellation is refused (503) while the job's worker cannot be reached; readiness
 * is this member's own.
 */
public final class ClusterJobManager extends AbstractBehavior<Object> {

    /** Longest a worker may take to answer a status or a cancellation before the directory's view is shown. */
    static final Duration WORKER_ANSWER = Duration.ofSeconds(5);
    /** How often mirrors not ended are checked against their job's status (for an end the topic lost). */
    static final Duration CHECK_INTERVAL = Duration.ofSeconds(1);
    static final int MIRRORS = 256;

    private record Event(JobEventMessage message) {
    }

    private record Fetched(JobStatus status, ActorRef<Optional<JobHandle>> replyTo) {
    }

    private record Listed(List<JobStatus> statuses, ActorRef<List<JobHandle>> replyTo) {
    }

    /** @param status the job's status, or null when it could not be had (asked again at the next tick) */
    private record Checked(String jobId, JobStatus status) {
    }

    private record Tick() {
    }

    private final ActorRef<JobDirectory.Command> directory;
    private final ToIntFunction<String> ranksOf;
    private final Duration askTimeout;
    private final Scheduler scheduler;
    private final Cluster cluster;
    private final EventMirrors mirrors;
    private final Map<String, PipelineGauges> gauges = new LinkedHashMap<>();
    private final Set<ActorRef<MetricsHub.Published>> subscribers = new LinkedHashSet<>();
    private final Set<String> checking = new HashSet<>();

    /**
     * @param directory  the {@link JobDirectory} singleton's proxy
     * @param topic      this member's {@link EventTopic} actor
     * @param journalOf  a job's {@code events.jsonl} in the shared jobs directory
     * @param ranksOf    a job's data-parallel ranks ({@code train.data_parallel} of its record)
     * @param askTimeout longest a placement may take (a worker builds the job's backend)
     */
    public static Behavior<JobManager.Command> create(ActorRef<JobDirectory.Command> directory,
                                                      ActorRef<Topic.Command<JobEventMessage>> topic,
                                                      Function<String, Path> journalOf, ToIntFunction<String> ranksOf,
                                                      Duration askTimeout) {
        Behavior<Object> behavior = Behaviors.setup(context -> Behaviors.withTimers(timers -> {
            timers.startTimerWithFixedDelay(new Tick(), CHECK_INTERVAL);
            return new ClusterJobManager(context, directory, topic, journalOf, ranksOf, askTimeout);
        }));
        return behavior.narrow();
    }

    private ClusterJobManager(ActorContext<Object> context, ActorRef<JobDirectory.Command> directory,
                              ActorRef<Topic.Command<JobEventMessage>> topic, Function<String, Path> journalOf,
                              ToIntFunction<String> ranksOf, Duration askTimeout) {
        super(context);
        this.directory = directory;
        this.ranksOf = ranksOf;
        this.askTimeout = askTimeout;
        this.scheduler = context.getSystem().scheduler();
        this.cluster = Cluster.get(context.getSystem());
        this.mirrors = new EventMirrors(journalOf, MIRRORS);
        // Subscribed before any mirror is read from a journal (see EventMirrors).
        topic.tell(Topic.subscribe(context.messageAdapter(JobEventMessage.class, Event::new)));
    }

    @Override
    public Receive<Object> createReceive() {
        return newReceiveBuilder()
                .onMessage(JobManager.StartJob.class, this::onStartJob)
                .onMessage(JobManager.GetJob.class, this::onGetJob)
                .onMessage(JobManager.ListJobs.class, this::onListJobs)
                .onMessage(JobManager.CancelJob.class, this::onCancelJob)
                .onMessage(JobManager.Purge.class, this::onPurge)
                .onMessage(JobManager.PurgeDone.class, done -> {
                    directory.tell(new JobDirectory.PurgeDone(done.jobId()));
                    return this;
                })
                .onMessage(JobManager.Evaluate.class, this::onEvaluate)
                .onMessage(JobManager.StopAll.class, this::onStopAll)
                .onMessage(JobManager.SubscribeEvents.class, this::onSubscribeEvents)
                .onMessage(JobManager.GetCapacity.class, this::onGetCapacity)
                .onMessage(JobManager.DescribeCluster.class, this::onDescribeCluster)
                .onMessage(Event.class, this::onEvent)
                .onMessage(Fetched.class, this::onFetched)
                .onMessage(Listed.class, this::onListed)
                .onMessage(Tick.class, this::onTick)
                .onMessage(Checked.class, this::onChecked)
                .build();
    }

    private Behavior<Object> onStartJob(JobManager.StartJob start) {
        int ranks;
        try {
            ranks = ranksOf.applyAsInt(start.jobId());
        } catch (RuntimeException e) {
            start.replyTo().tell(StatusReply.error(new RunRefused(500, "cannot read job " + start.jobId()
                    + "'s record: " + e.getMessage(), null)));
            return this;
        }
        this.<JobDirectory.Command, RunReply>ask(directory, ref -> new JobDirectory.Submit(start.jobId(), ranks, ref), askTimeout.plusSeconds(5))
                .whenComplete((reply, failure) -> start.replyTo().tell(failure != null
                        ? StatusReply.error(new RunRefused(503, "the job directory did not answer within "
                                + askTimeout.plusSeconds(5).toSeconds() + " s", null))
                        : reply.status() != null ? StatusReply.success(reply.status())
                        : StatusReply.error(reply.refusal() != null ? reply.refusal().toException()
                                : new RunRefused(500, "the worker answered nothing", null))));
        return this;
    }

    private Behavior<Object> onGetJob(JobManager.GetJob get) {
        getContext().pipeToSelf(status(get.jobId()), (status, failure) ->
                new Fetched(failure == null ? status.orElse(null) : null, get.replyTo()));
        return this;
    }

    private Behavior<Object> onFetched(Fetched fetched) {
        fetched.replyTo().tell(Optional.ofNullable(fetched.status()).map(this::handle));
        return this;
    }

    private Behavior<Object> onListJobs(JobManager.ListJobs list) {
        getContext().pipeToSelf(statuses(), (statuses, failure) ->
                new Listed(failure == null ? statuses : List.of(), list.replyTo()));
        return this;
    }

    private Behavior<Object> onListed(Listed listed) {
        listed.replyTo().tell(listed.statuses().stream().map(this::handle).toList());
        return this;
    }

    private JobHandle handle(JobStatus status) {
        return new JobHandle(status, mirrors.open(status), gauges.computeIfAbsent(status.id(), id -> new PipelineGauges()));
    }

    /**
     * A cancellation is told to the job's worker and its answer relayed. A job not placed, or whose worker is gone for
     * good, answers what is known (its end, or unknown). A worker that this member sees unreachable is not asked (the ask
     * could only time out): the reply is a 503 naming it (nothing was cancelled), as for one that does not answer within
     * {@link #WORKER_ANSWER} (the cancellation may have reached it); the client may retry (or, once the member is
     * removed, finds the run failed).
     */
    private Behavior<Object> onCancelJob(JobManager.CancelJob cancel) {
        String id = cancel.jobId();
        locate(id).<CompletionStage<StatusReply<Optional<JobStatus>>>>handle((location, failure) -> {
            if (failure != null) {
                return CompletableFuture.completedFuture(StatusReply.<Optional<JobStatus>>error(new RunRefused(503,
                        "the job directory did not answer within " + askTimeout.toSeconds() + " s; retry DELETE /v1/jobs/"
                                + id, null)));
            }
            if (!location.placed() || location.lost() || leavingForGood(location.workers().getFirst())) {
                return CompletableFuture.completedFuture(StatusReply.success(Optional.ofNullable(location.known())));
            }
            ActorRef<WorkerAgent.Command> worker = location.workers().getFirst();
            if (unreachable(worker)) {
                return CompletableFuture.completedFuture(StatusReply.<Optional<JobStatus>>error(new RunRefused(503,
                        "job " + id + " was not cancelled: its worker " + worker.path().address() + " is unreachable. "
                                + "Retry DELETE /v1/jobs/" + id + " once it is reachable again; should it be removed "
                                + "from the cluster instead, the run is marked failed (resumable from its newest "
                                + "checkpoint)", null)));
            }
            return this.<WorkerAgent.Command, RunReply>ask(worker, ref -> new WorkerAgent.CancelRun(id, ref), WORKER_ANSWER)
                    .handle((reply, noAnswer) -> noAnswer != null
                            ? StatusReply.<Optional<JobStatus>>error(new RunRefused(503, "job " + id
                                    + " may not be cancelled: its worker " + worker.path().address()
                                    + " did not answer the cancellation within " + WORKER_ANSWER.toSeconds()
                                    + " s; retry DELETE /v1/jobs/" + id, null))
                            : StatusReply.success(Optional.ofNullable(reply.status() != null ? reply.status()
                                    : location.known())));
        }).thenCompose(Function.identity()).thenAccept(cancel.replyTo()::tell);
        return this;
    }

    /**
     * {@code DELETE /v1/jobs/{id}?purge=true}: the {@link JobDirectory} has the job's worker purge it (its status and
     * files) and forgets its placement; the caller ({@code JobService}) then removes what is left of its files (those
     * of a job not placed, known only from its directory) and sends {@link JobManager.PurgeDone}, which frees the id.
     */
    private Behavior<Object> onPurge(JobManager.Purge purge) {
        String id = purge.jobId();
        this.<JobDirectory.Command, RunReply>ask(directory, ref -> new JobDirectory.Purge(id, ref), askTimeout)
                .whenComplete((reply, failure) -> purge.replyTo().tell(failure != null
                        ? StatusReply.error(new RunRefused(503, "the job directory did not answer the purge of job " + id
                                + " within " + askTimeout.toSeconds() + " s; retry", null))
                        : reply.refusal() != null ? StatusReply.error(reply.refusal().toException())
                        : StatusReply.success(Optional.ofNullable(reply.status()))));
        return this;
    }

    private Behavior<Object> onEvaluate(JobManager.Evaluate evaluate) {
        evaluate.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING,
                "POST /v1/steps is not served by a cluster's api members: job " + evaluate.jobId()
                        + "'s weights live on its worker")));
        return this;
    }

    /** This member is going away; the jobs run on the workers and go on. */
    private Behavior<Object> onStopAll(JobManager.StopAll stop) {
        stop.replyTo().tell(Done.getInstance());
        return this;
    }

    private Behavior<Object> onSubscribeEvents(JobManager.SubscribeEvents subscribe) {
        subscribers.add(subscribe.subscriber());
        return this;
    }

    private Behavior<Object> onGetCapacity(JobManager.GetCapacity get) {
        get.replyTo().tell(new JobManager.Capacity(0, 0, 0, Admission.UNLIMITED, false));
        return this;
    }

    private Behavior<Object> onDescribeCluster(JobManager.DescribeCluster describe) {
        this.<JobDirectory.Command, JobDirectory.Placements>ask(directory, JobDirectory.Describe::new, WORKER_ANSWER)
                .exceptionally(failure -> new JobDirectory.Placements(List.of()))
                .thenAccept(placements -> describe.replyTo().tell(Optional.of(view(cluster, placements))));
        return this;
    }

    private static ClusterView view(Cluster cluster, JobDirectory.Placements placements) {
        ClusterEvent.CurrentClusterState state = cluster.state();
        Set<Member> unreachable = state.getUnreachable();
        Map<String, List<String>> jobsByMember = new LinkedHashMap<>();
        for (JobDirectory.Location location : placements.jobs()) {
            boolean active = !location.lost() && location.known() != null && !location.known().state().isTerminal();
            if (active) {
                location.members().forEach(m -> jobsByMember.computeIfAbsent(m, k -> new ArrayList<>())
                        .add(location.jobId()));
            }
        }
        List<ClusterView.Member> members = new ArrayList<>();
        for (Member member : state.getMembers()) {
            String address = member.address().toString();
            members.add(new ClusterView.Member(address, member.getRoles().stream().filter(r -> !r.startsWith("dc-"))
                    .sorted().toList(), member.status().toString(), !unreachable.contains(member),
                    jobsByMember.getOrDefault(address, List.of())));
        }
        return new ClusterView(cluster.selfMember().address().toString(),
                state.getLeader() == null ? null : state.getLeader().toString(), members);
    }

    private Behavior<Object> onEvent(Event event) {
        mirrors.live(event.message());
        MetricsHub.Published published = new MetricsHub.Published(event.message().jobId(), event.message().event());
        subscribers.forEach(subscriber -> subscriber.tell(published));
        return this;
    }

    private Behavior<Object> onTick(Tick tick) {
        for (String id : mirrors.open()) {
            if (checking.add(id)) {
                getContext().pipeToSelf(status(id), (status, failure) ->
                        new Checked(id, failure == null ? status.orElse(null) : null));
            }
        }
        return this;
    }

    private Behavior<Object> onChecked(Checked checked) {
        checking.remove(checked.jobId());
        if (checked.status() != null) {
            mirrors.endFromStatus(checked.status());
        }
        return this;
    }

    /**
     * A job's status: its worker's word, or the directory's last view if the worker is gone, unreachable or does not
     * answer. A worker that {@link #mayAsk} rules out is not asked (the ask could only time out): so a status never waits
     * on a member known to be gone, also before the directory has heard of its removal.
     */
    private CompletionStage<Optional<JobStatus>> status(String id) {
        return locate(id).thenCompose(location -> {
            if (!location.placed()) {
                return CompletableFuture.completedFuture(Optional.empty());
            }
            if (location.lost() || !mayAsk(location.workers().getFirst())) {
                return CompletableFuture.completedFuture(Optional.of(location.known()));
            }
            return this.<WorkerAgent.Command, RunReply>ask(location.workers().getFirst(), ref -> new WorkerAgent.GetRun(id, ref),
                            WORKER_ANSWER)
                    .handle((reply, failure) -> Optional.of(failure == null && reply.status() != null ? reply.status()
                            : location.known()));
        });
    }

    /** Every placed job's status: each worker is asked once for all its runs. */
    private CompletionStage<List<JobStatus>> statuses() {
        return this.<JobDirectory.Command, JobDirectory.Placements>ask(directory, JobDirectory.Describe::new, askTimeout)
                .thenCompose(placements -> {
                    Set<ActorRef<WorkerAgent.Command>> workers = new LinkedHashSet<>();
                    placements.jobs().stream().filter(l -> !l.lost() && mayAsk(l.workers().getFirst()))
                            .forEach(l -> workers.add(l.workers().getFirst()));
                    List<CompletableFuture<WorkerAgent.RunList>> answers = workers.stream().map(worker ->
                            this.<WorkerAgent.Command, WorkerAgent.RunList>ask(worker, WorkerAgent.ListRuns::new, WORKER_ANSWER)
                                    .exceptionally(failure -> null).toCompletableFuture()).toList();
                    return CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).thenApply(done -> {
                        Map<ActorRef<WorkerAgent.Command>, Map<String, JobStatus>> byWorker = new LinkedHashMap<>();
                        for (CompletableFuture<WorkerAgent.RunList> answer : answers) {
                            WorkerAgent.RunList list = answer.join();
                            if (list != null) {
                                Map<String, JobStatus> runs = new LinkedHashMap<>();
                                list.runs().forEach(run -> runs.put(run.id(), run));
                                byWorker.put(list.worker(), runs);
                            }
                        }
                        List<JobStatus> out = new ArrayList<>();
                        for (JobDirectory.Location location : placements.jobs()) {
                            JobStatus fromWorker = location.lost() ? null
                                    : byWorker.getOrDefault(location.workers().getFirst(), Map.of()).get(location.jobId());
                            out.add(fromWorker != null ? fromWorker : location.known());
                        }
                        return out;
                    });
                });
    }

    /**
     * Whether a status may be asked of {@code worker}, by this member's view of the cluster: not when its member is
     * unreachable, has left or is leaving for good ({@code Exiting}, {@code Down}), or is not a member at all (removed;
     * or, for a moment after it joined, not yet seen here, when the directory's view is as good an answer).
     */
    private boolean mayAsk(ActorRef<WorkerAgent.Command> worker) {
        Address address = worker.path().address();
        if (!address.hasGlobalScope()) {
            return true; // this member's own agent
        }
        ClusterEvent.CurrentClusterState state = cluster.state();
        Optional<Member> member = memberAt(state, address);
        return member.isPresent() && !leftForGood(member.get()) && !state.getUnreachable().contains(member.get());
    }

    /**
     * Whether {@code worker}'s member is seen leaving for good ({@code Exiting}, {@code Down}): a cancellation is not
     * sent there, and the job's known status answers. It is still sent to one not seen here (it may have joined a moment
     * ago).
     */
    private boolean leavingForGood(ActorRef<WorkerAgent.Command> worker) {
        Address address = worker.path().address();
        return address.hasGlobalScope() && memberAt(cluster.state(), address).map(ClusterJobManager::leftForGood)
                .orElse(false);
    }

    /** Whether this member's failure detector has {@code worker}'s member unreachable. */
    private boolean unreachable(ActorRef<WorkerAgent.Command> worker) {
        Address address = worker.path().address();
        return address.hasGlobalScope() && unreachable(cluster, address);
    }

    /** Whether {@code cluster}'s failure detector (this member's) has the member at {@code address} unreachable. */
    static boolean unreachable(Cluster cluster, Address address) {
        return cluster.state().getUnreachable().stream().anyMatch(member -> member.address().equals(address));
    }

    private static boolean leftForGood(Member member) {
        MemberStatus status = member.status();
        return status == MemberStatus.exiting() || status == MemberStatus.down() || status == MemberStatus.removed();
    }

    private static Optional<Member> memberAt(ClusterEvent.CurrentClusterState state, Address address) {
        for (Member member : state.getMembers()) {
            if (member.address().equals(address)) {
                return Optional.of(member);
            }
        }
        return Optional.empty();
    }

    private CompletionStage<JobDirectory.Location> locate(String id) {
        return this.<JobDirectory.Command, JobDirectory.Location>ask(directory, ref -> new JobDirectory.Locate(id, ref),
                askTimeout);
    }

    private <Q, T> CompletionStage<T> ask(ActorRef<Q> target, org.apache.pekko.japi.function.Function<ActorRef<T>, Q> message,
                                          Duration timeout) {
        return AskPattern.ask(target, message, timeout, scheduler);
    }
}
