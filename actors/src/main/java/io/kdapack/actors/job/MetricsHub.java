package io.kdapack.actors.job;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Publish/subscribe of job events. It is the single writer of every job's {@link JobEventLog} (which HTTP
 * streams read and replay from) and forwards each event to actor subscribers, in publication order.
 */
public final class MetricsHub extends AbstractBehavior<MetricsHub.Command> {

    public sealed interface Command permits Register, Publish, Forget, Subscribe, Unsubscribe {
    }

    /** Start recording the events of a job run into {@code log} (replacing an earlier run's log). */
    public record Register(String jobId, JobEventLog log) implements Command {
    }

    public record Publish(String jobId, JobEvent event) implements Command {
    }

    /** Drop a finished job's log. */
    public record Forget(String jobId) implements Command {
    }

    public record Subscribe(ActorRef<Published> subscriber) implements Command {
    }

    public record Unsubscribe(ActorRef<Published> subscriber) implements Command {
    }

    /** What subscribers receive. */
    public record Published(String jobId, JobEvent event) {
    }

    private final Map<String, JobEventLog> logs = new HashMap<>();
    private final Set<ActorRef<Published>> subscribers = new LinkedHashSet<>();

    public static Behavior<Command> create() {
        return Behaviors.setup(MetricsHub::new);
    }

    private MetricsHub(ActorContext<Command> context) {
        super(context);
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Register.class, this::onRegister)
                .onMessage(Publish.class, this::onPublish)
                .onMessage(Forget.class, this::onForget)
                .onMessage(Subscribe.class, this::onSubscribe)
                .onMessage(Unsubscribe.class, this::onUnsubscribe)
                .build();
    }

    private Behavior<Command> onRegister(Register register) {
        logs.put(register.jobId(), register.log());
        return this;
    }

    private Behavior<Command> onPublish(Publish publish) {
        JobEventLog log = logs.get(publish.jobId());
        if (log == null) {
            getContext().getLog().warn("dropping an event of job {}, which has no event log", publish.jobId());
            return this;
        }
        switch (publish.event()) {
            case StepEvent step -> log.append(step);
            case EndEvent end -> log.end(end);
        }
        Published published = new Published(publish.jobId(), publish.event());
        subscribers.forEach(subscriber -> subscriber.tell(published));
        return this;
    }

    private Behavior<Command> onForget(Forget forget) {
        logs.remove(forget.jobId());
        return this;
    }

    private Behavior<Command> onSubscribe(Subscribe subscribe) {
        subscribers.add(subscribe.subscriber());
        getContext().watchWith(subscribe.subscriber(), new Unsubscribe(subscribe.subscriber()));
        return this;
    }

    private Behavior<Command> onUnsubscribe(Unsubscribe unsubscribe) {
        subscribers.remove(unsubscribe.subscriber());
        return this;
    }
}
