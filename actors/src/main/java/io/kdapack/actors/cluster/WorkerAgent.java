package io.kdapack.actors.cluster;

import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.actors.job.MetricsHub;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
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
 */
public final class WorkerAgent extends AbstractBehavior<WorkerAgent.Command> {

    /** Every worker member's agent. */
    public static final ServiceKey<Command> KEY = ServiceKey.create(Command.class, "kdapack-worker");

    public sealed interface Command permits StartRun, GetRun, ListRuns, CancelRun, Event {
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

    /** What {@link ListRuns} answers: the statuses and who answered. */
    public record RunList(ActorRef<Command> worker, List<JobStatus> runs) implements ClusterMessage {
    }

    private record Event(MetricsHub.Published published) implements Command {
    }

    private final LocalJobs jobs;
    private final ActorRef<Topic.Command<JobEventMessage>> topic;

    /**
     * @param manager this member's job manager (its events are republished)
     * @param topic   this member's {@link EventTopic} actor
     */
    public static Behavior<Command> create(LocalJobs jobs, ActorRef<JobManager.Command> manager,
                                           ActorRef<Topic.Command<JobEventMessage>> topic) {
        return Behaviors.setup(context -> new WorkerAgent(context, jobs, manager, topic));
    }

    private WorkerAgent(ActorContext<Command> context, LocalJobs jobs, ActorRef<JobManager.Command> manager,
                        ActorRef<Topic.Command<JobEventMessage>> topic) {
        super(context);
        this.jobs = jobs;
        this.topic = topic;
        manager.tell(new JobManager.SubscribeEvents(context.messageAdapter(MetricsHub.Published.class, Event::new)));
        context.getSystem().receptionist().tell(Receptionist.register(KEY, context.getSelf()));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(StartRun.class, this::onStartRun)
                .onMessage(GetRun.class, this::onGetRun)
                .onMessage(ListRuns.class, this::onListRuns)
                .onMessage(CancelRun.class, this::onCancelRun)
                .onMessage(Event.class, this::onEvent)
                .build();
    }

    private Behavior<Command> onStartRun(StartRun start) {
        reply(jobs.start(start.jobId()), start.replyTo());
        return this;
    }

    private Behavior<Command> onGetRun(GetRun get) {
        jobs.get(get.jobId()).whenComplete((status, failure) -> get.replyTo().tell(failure != null
                ? RunReply.refused(refusal(failure)) : status.map(RunReply::of).orElseGet(RunReply::unknown)));
        return this;
    }

    private Behavior<Command> onListRuns(ListRuns list) {
        ActorRef<Command> self = getContext().getSelf();
        jobs.list().whenComplete((runs, failure) ->
                list.replyTo().tell(new RunList(self, failure != null ? List.of() : runs)));
        return this;
    }

    private Behavior<Command> onCancelRun(CancelRun cancel) {
        reply(jobs.cancel(cancel.jobId()), cancel.replyTo());
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
