package io.kdapack.actors.cluster;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * Where every job of the cluster runs: a cluster singleton on the api members (one instance at a time, moved to the
 * next oldest api member when its own goes away). It places each run on worker members ({@link WorkerPlacement#choose}), and
 * answers every api member's {@link Locate}; the job's status itself is asked of its worker, which keeps it as in a
 * single JVM.
 *
 * <p>State and its recovery: the placements only. A new instance (after a handover) asks every worker it finds in the
 * Receptionist for its runs ({@link WorkerAgent.ListRuns}) and so knows every job that a live worker keeps; what it
 * cannot know again is the placements of workers that died meanwhile, whose jobs are then listed as resumable from
 * disk.
 *
 * <p>Failure: when a worker member is removed from the membership (it left, crashed, or was downed by the split brain
 * resolver once unreachable for {@code cluster.failure_timeout_ms} and then stable for {@code cluster.stable_after_ms}),
 * every run placed on it that had not ended ends {@code failed} with the reason (or with the end its journal recorded,
 * for a worker that stopped its jobs before leaving), the end is published on the {@link EventTopic} so that every
 * stream ends; the other ranks of a data-parallel run fail on their own ({@link ParallelRun}). A failed run is
 * resumable from its newest checkpoint on any worker (docs/cluster.md, "Failure"). A run that had ended before its
 * worker left keeps its end; either way the placement is then {@code lost}: its status is final and no one asks the gone
 * member for it.
 */
public final class JobDirectory extends AbstractBehavior<JobDirectory.Command> {

    public sealed interface Command permits Submit, Locate, Describe, Purge, PurgeDone, WorkersChanged, Recovered,
            Started, Purged, HoldExpired, MemberGone, Event {
    }

    /**
     * Place a run of job {@code jobId} (whose record is in the shared jobs directory) on {@code ranks} distinct workers
     * and start it; replies the status of rank 0, or the refusal.
     */
    public record Submit(String jobId, int ranks, ActorRef<RunReply> replyTo) implements Command, ClusterMessage {
    }

    public record Locate(String jobId, ActorRef<Location> replyTo) implements Command, ClusterMessage {
    }

    /**
     * Purge an ended job ({@code DELETE /v1/jobs/{id}?purge=true}): its worker purges it as a single server does (its job
     * manager forgets the status, its files are removed), then this directory forgets the placement and refuses the id
     * until {@link PurgeDone} (at most {@link #PURGE_HOLD}). Replies the last status, {@link RunReply#unknown} for a job not placed here (its files, if
     * any, are the asking member's to remove), or the refusal: 409 while it runs or is being purged, 503 when its worker
     * is unreachable or does not answer within {@link ClusterJobManager#WORKER_ANSWER} (nothing forgotten here then).
     */
    public record Purge(String jobId, ActorRef<RunReply> replyTo) implements Command, ClusterMessage {
    }

    /** The asking member has removed what was left of a purged job's files: its id may be started again. */
    public record PurgeDone(String jobId) implements Command, ClusterMessage {
    }

    /** Every placement this instance knows. */
    public record Describe(ActorRef<Placements> replyTo) implements Command, ClusterMessage {
    }

    /**
     * Where a job's current (or last) run is placed: its workers, rank 0 first (empty for a job this directory does not
     * know), what the directory last heard of it, and whether its workers are gone (then {@code known} is final).
     *
     * @param members the addresses of {@code workers}, in the same order
     */
    public record Location(String jobId, List<ActorRef<WorkerAgent.Command>> workers, List<String> members,
                           JobStatus known, boolean lost) implements ClusterMessage {
        public boolean placed() { // not isPlaced: Jackson would take an is-method for a property
            return !workers.isEmpty();
        }
    }

    public record Placements(List<Location> jobs) implements ClusterMessage {
    }

    private record WorkersChanged(Receptionist.Listing listing) implements Command {
    }

    private record Recovered(WorkerAgent.RunList list) implements Command {
    }

    private record Started(String jobId, List<ActorRef<WorkerAgent.Command>> workers, RunReply reply, Throwable failure,
                           ActorRef<RunReply> replyTo) implements Command {
    }

    private record Purged(String jobId, RunReply reply, Throwable failure, ActorRef<RunReply> replyTo)
            implements Command {
    }

    private record HoldExpired(String jobId, long hold) implements Command {
    }

    private record MemberGone(ClusterEvent.MemberRemoved removed) implements Command {
    }

    private record Event(JobEventMessage message) implements Command {
    }

    /**
     * A run's placement ({@link WorkerPlacement} chooses its workers); {@code lost}: one of its workers left the cluster
     * (during the run or after its end), so {@code known} is its final status and no worker is asked for it.
     */
    private record Placement(List<ActorRef<WorkerAgent.Command>> workers, JobStatus known, boolean lost) {
        boolean active() {
            return !lost && !known.state().isTerminal();
        }
    }

    /** Longest a purged job's id is held without the asking member's {@link PurgeDone}. */
    static final Duration PURGE_HOLD = Duration.ofMinutes(2);

    /** Ended placements kept for {@link Locate} (the workers keep their own 32 finished jobs too). */
    static final int RETAIN_ENDED = 256;

    private final Duration askTimeout;
    private final Function<String, Path> journalOf;
    private final ActorRef<Topic.Command<JobEventMessage>> topic;
    private final Address self;
    private final Map<String, Placement> placements = new LinkedHashMap<>();
    private final Set<String> starting = new HashSet<>();
    /**
     * Jobs being purged, each with its hold's number: not started until {@link PurgeDone}, or {@link #PURGE_HOLD} for an
     * api member that went away before sending it (a new instance after a handover starts without them).
     */
    private final Map<String, Long> purging = new HashMap<>();
    private long holds;
    private final Cluster cluster;
    private final Set<ActorRef<WorkerAgent.Command>> workers = new HashSet<>();

    /**
     * @param askTimeout longest a worker may take to start a run (it builds the job's backend: dataset index, model)
     * @param journalOf  the {@code events.jsonl} of a job, in the jobs directory every member sees
     * @param topic      this member's {@link EventTopic} actor
     */
    public static Behavior<Command> create(Duration askTimeout, Function<String, Path> journalOf,
                                           ActorRef<Topic.Command<JobEventMessage>> topic) {
        return Behaviors.setup(context -> new JobDirectory(context, askTimeout, journalOf, topic));
    }

    private JobDirectory(ActorContext<Command> context, Duration askTimeout, Function<String, Path> journalOf,
                         ActorRef<Topic.Command<JobEventMessage>> topic) {
        super(context);
        this.askTimeout = askTimeout;
        this.journalOf = journalOf;
        this.topic = topic;
        this.cluster = Cluster.get(context.getSystem());
        this.self = cluster.selfMember().address();
        cluster.subscriptions().tell(Subscribe.create(
                context.messageAdapter(ClusterEvent.MemberRemoved.class, MemberGone::new), ClusterEvent.MemberRemoved.class));
        context.getSystem().receptionist().tell(Receptionist.subscribe(WorkerAgent.KEY,
                context.messageAdapter(Receptionist.Listing.class, WorkersChanged::new)));
        topic.tell(Topic.subscribe(context.messageAdapter(JobEventMessage.class, Event::new)));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Submit.class, this::onSubmit)
                .onMessage(Locate.class, this::onLocate)
                .onMessage(Describe.class, this::onDescribe)
                .onMessage(Purge.class, this::onPurge)
                .onMessage(Purged.class, this::onPurged)
                .onMessage(PurgeDone.class, done -> {
                    purging.remove(done.jobId());
                    return this;
                })
                .onMessage(HoldExpired.class, expired -> {
                    purging.remove(expired.jobId(), expired.hold());
                    return this;
                })
                .onMessage(WorkersChanged.class, this::onWorkersChanged)
                .onMessage(Recovered.class, this::onRecovered)
                .onMessage(Started.class, this::onStarted)
                .onMessage(MemberGone.class, this::onMemberGone)
                .onMessage(Event.class, this::onEvent)
                .build();
    }

    private Behavior<Command> onSubmit(Submit submit) {
        String id = submit.jobId();
        Placement existing = placements.get(id);
        if (starting.contains(id) || existing != null && existing.active()) {
            submit.replyTo().tell(RunReply.refused(new RunRefused(409, "job " + id + " is "
                    + (starting.contains(id) ? "being started" : "running on " + members(existing.workers())), null)));
            return this;
        }
        if (purging.containsKey(id)) {
            submit.replyTo().tell(RunReply.refused(new RunRefused(409, JobManager.beingPurged(id), null)));
            return this;
        }
        List<ActorRef<WorkerAgent.Command>> chosen;
        try {
            chosen = WorkerPlacement.choose(workers, activeRuns(), submit.ranks(), this::address);
        } catch (RunRefused refused) {
            submit.replyTo().tell(RunReply.refused(refused));
            return this;
        }
        starting.add(id);
        ActorRef<WorkerAgent.Command> worker = chosen.getFirst();
        // A data-parallel run: rank 0's worker coordinates it and has every chosen worker spawn its rank.
        getContext().ask(RunReply.class, worker, askTimeout, ref -> chosen.size() == 1
                        ? new WorkerAgent.StartRun(id, ref) : new WorkerAgent.StartParallel(id, chosen, ref),
                (reply, failure) -> new Started(id, chosen, reply, failure, submit.replyTo()));
        return this;
    }

    private Behavior<Command> onStarted(Started started) {
        starting.remove(started.jobId());
        if (started.failure() != null) {
            started.replyTo().tell(RunReply.refused(new RunRefused(503, "worker " + members(started.workers())
                    + " did not start job " + started.jobId() + " within " + askTimeout.toSeconds() + " s", null)));
            return this;
        }
        if (started.reply().status() != null) {
            place(started.jobId(), new Placement(started.workers(), started.reply().status(), false));
        }
        started.replyTo().tell(started.reply());
        return this;
    }

    private Behavior<Command> onPurge(Purge purge) {
        String id = purge.jobId();
        Placement placement = placements.get(id);
        if (starting.contains(id) || placement != null && placement.active()) {
            purge.replyTo().tell(RunReply.refused(new RunRefused(409, JobManager.notPurgedWhile(id,
                    starting.contains(id) ? "being started" : placement.known().state().name().toLowerCase()), null)));
            return this;
        }
        if (purging.containsKey(id)) {
            purge.replyTo().tell(RunReply.refused(new RunRefused(409, JobManager.beingPurged(id), null)));
            return this;
        }
        if (placement == null || placement.lost()) {
            // Not placed here, or its worker has left (and its job manager with it): nothing to forget but the placement.
            hold(id);
            placements.remove(id);
            purge.replyTo().tell(placement == null ? RunReply.unknown() : RunReply.of(placement.known()));
            return this;
        }
        // Rank 0's worker keeps the job's status (a data-parallel run's too); the other ranks keep none once ended.
        ActorRef<WorkerAgent.Command> worker = placement.workers().getFirst();
        Address member = address(worker);
        if (ClusterJobManager.unreachable(cluster, member)) {
            purge.replyTo().tell(RunReply.refused(new RunRefused(503, "job " + id + " was not purged: its worker "
                    + member + " is unreachable; retry once it is reachable again, or once it has been removed from the"
                    + " cluster", null)));
            return this;
        }
        hold(id);
        getContext().ask(RunReply.class, worker, ClusterJobManager.WORKER_ANSWER, ref -> new WorkerAgent.PurgeRun(id, ref),
                (reply, failure) -> new Purged(id, reply, failure, purge.replyTo()));
        return this;
    }

    /** The worker's answer to a purge: the placement is forgotten when the worker has purged the job or never knew it. */
    private Behavior<Command> onPurged(Purged purged) {
        String id = purged.jobId();
        Placement placement = placements.get(id);
        RunRefused.Refusal refusal = purged.reply() == null ? null : purged.reply().refusal();
        if (purged.failure() != null || refusal != null && refusal.status() != 404) {
            purging.remove(id);
            purged.replyTo().tell(purged.failure() == null ? purged.reply() : RunReply.refused(new RunRefused(503,
                    "job " + id + "'s worker " + (placement == null ? "" : members(placement.workers()))
                            + " did not answer the purge within " + ClusterJobManager.WORKER_ANSWER.toSeconds()
                            + " s; it may not have been purged: retry", null)));
            return this;
        }
        placements.remove(id);
        JobStatus last = purged.reply().status() != null ? purged.reply().status()
                : placement == null ? null : placement.known();
        purged.replyTo().tell(last == null ? RunReply.unknown() : RunReply.of(last));
        return this;
    }

    private void hold(String id) {
        long hold = ++holds;
        purging.put(id, hold);
        getContext().scheduleOnce(PURGE_HOLD, getContext().getSelf(), new HoldExpired(id, hold));
    }

    private Behavior<Command> onLocate(Locate locate) {
        locate.replyTo().tell(location(locate.jobId(), placements.get(locate.jobId())));
        return this;
    }

    private Behavior<Command> onDescribe(Describe describe) {
        List<Location> all = new ArrayList<>();
        placements.forEach((id, placement) -> all.add(location(id, placement)));
        describe.replyTo().tell(new Placements(all));
        return this;
    }

    private Location location(String id, Placement placement) {
        return placement == null ? new Location(id, List.of(), List.of(), null, false)
                : new Location(id, placement.workers(), placement.workers().stream().map(w -> address(w).toString())
                        .toList(), placement.known(), placement.lost());
    }

    /** New workers are asked what they run: after a handover this is how the placements come back. */
    private Behavior<Command> onWorkersChanged(WorkersChanged changed) {
        Set<ActorRef<WorkerAgent.Command>> now = changed.listing().getServiceInstances(WorkerAgent.KEY);
        for (ActorRef<WorkerAgent.Command> worker : now) {
            if (!workers.contains(worker)) {
                getContext().ask(WorkerAgent.RunList.class, worker, askTimeout, WorkerAgent.ListRuns::new,
                        (list, failure) -> new Recovered(list));
            }
        }
        workers.clear();
        workers.addAll(now);
        return this;
    }

    private Behavior<Command> onRecovered(Recovered recovered) {
        if (recovered.list() == null) {
            return this; // the worker did not answer (it is going away): its runs are unknown here
        }
        for (JobStatus status : recovered.list().runs()) {
            Placement known = placements.get(status.id());
            boolean newer = known == null || !known.active() && !status.state().isTerminal()
                    || known.workers().contains(recovered.list().worker())
                    || known.known().startedAt() != null && status.startedAt() != null
                            && status.startedAt().isAfter(known.known().startedAt());
            if (newer && !starting.contains(status.id())) {
                place(status.id(), new Placement(List.of(recovered.list().worker()), status, false));
            }
        }
        return this;
    }

    private Behavior<Command> onMemberGone(MemberGone gone) {
        Address member = gone.removed().member().address();
        workers.removeIf(worker -> address(worker).equals(member));
        placements.forEach((id, placement) -> {
            if (placement.lost() || placement.workers().stream().noneMatch(w -> address(w).equals(member))) {
                return;
            }
            if (!placement.active()) {
                // Ended before its worker left: the status is final, and no one is to ask the gone member for it.
                placements.put(id, new Placement(placement.workers(), placement.known(), true));
            } else {
                JobStatus ended = lostRun(id, placement.known(), member);
                getContext().getLog().warn("job {}: worker {} left the cluster during the run; {}", id, member,
                        ended.state().name().toLowerCase());
                placements.put(id, new Placement(placement.workers(), ended, true));
                topic.tell(Topic.publish(new JobEventMessage(id, null,
                        new EndEvent(ended.state(), ended.step(), ended.error()))));
                // The other ranks of a data-parallel run fail on their own (each watches its peers), and rank 0's
                // worker records that end: a cancel here would turn it into "cancelled".
            }
        });
        return this;
    }

    /**
     * The final status of a run whose worker is gone: the end its journal recorded if the worker ended the run before
     * leaving (a graceful stop), else {@code failed} with the reason; its step and loss are the journal's last.
     */
    private JobStatus lostRun(String id, JobStatus known, Address member) {
        long step = known.step();
        Double loss = known.lastLoss();
        Optional<EndEvent> end = Optional.empty();
        try {
            Path journal = journalOf.apply(id);
            List<StepEvent> steps = EventJournal.readSteps(journal);
            if (!steps.isEmpty() && steps.getLast().step() >= step) {
                step = steps.getLast().step();
                loss = steps.getLast().loss();
            }
            end = EventJournal.lastEnd(journal);
        } catch (IOException | RuntimeException e) {
            getContext().getLog().warn("job {}: cannot read its journal: {}", id, e.toString());
        }
        long lastStep = step;
        if (end.isPresent() && end.get().step() >= lastStep && end.get().state().isResumable()
                && end.get().state() != JobState.FAILED) {
            return new JobStatus(id, end.get().state(), step, known.totalSteps(), loss, known.startedAt(),
                    Instant.now(), end.get().error());
        }
        return new JobStatus(id, JobState.FAILED, step, known.totalSteps(), loss, known.startedAt(), Instant.now(),
                "worker " + member + " left the cluster during the run (it stopped, crashed or was killed, or was"
                        + " downed after being unreachable for cluster.failure_timeout_ms); resume the job to continue"
                        + " from its newest checkpoint");
    }

    /** Keeps the directory's view of a run current from its events (for placement counts and lost runs). */
    private Behavior<Command> onEvent(Event event) {
        JobEventMessage message = event.message();
        Placement placement = placements.get(message.jobId());
        if (placement == null || placement.lost()) {
            return this;
        }
        JobStatus k = placement.known();
        JobStatus updated = message.step() != null
                ? new JobStatus(k.id(), JobState.RUNNING, message.step().step(), k.totalSteps(), message.step().loss(),
                        k.startedAt(), null, null)
                : new JobStatus(k.id(), message.end().state(), message.end().step(), k.totalSteps(), k.lastLoss(),
                        k.startedAt(), Instant.now(), message.end().error());
        placements.put(message.jobId(), new Placement(placement.workers(), updated, false));
        return this;
    }

    private void place(String id, Placement placement) {
        placements.remove(id);
        placements.put(id, placement);
        List<String> ended = placements.entrySet().stream().filter(e -> !e.getValue().active()).map(Map.Entry::getKey)
                .toList();
        for (int i = 0; i < ended.size() - RETAIN_ENDED; i++) {
            placements.remove(ended.get(i));
        }
    }

    /** Runs not ended, per worker. */
    private Map<ActorRef<WorkerAgent.Command>, Integer> activeRuns() {
        Map<ActorRef<WorkerAgent.Command>, Integer> counts = new LinkedHashMap<>();
        placements.values().stream().filter(Placement::active).forEach(p ->
                p.workers().forEach(w -> counts.merge(w, 1, Integer::sum)));
        return counts;
    }

    private String members(List<ActorRef<WorkerAgent.Command>> refs) {
        return String.join(", ", refs.stream().map(r -> address(r).toString()).toList());
    }

    /** The member an actor lives on (a local reference has no host in its path: it is this member). */
    private Address address(ActorRef<?> ref) {
        Address address = ref.path().address();
        return address.hasGlobalScope() ? address : self;
    }

    /** Orders candidate workers for a placement: fewest runs first, then by address, so placement is reproducible. */
    static Comparator<ActorRef<WorkerAgent.Command>> byLoad(Map<ActorRef<WorkerAgent.Command>, Integer> runs,
                                                            Function<ActorRef<?>, Address> addressOf) {
        return Comparator.<ActorRef<WorkerAgent.Command>>comparingInt(w -> runs.getOrDefault(w, 0))
                .thenComparing(w -> addressOf.apply(w).toString());
    }
}
