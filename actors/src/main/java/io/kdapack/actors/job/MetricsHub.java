package io.kdapack.actors.job;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.JobEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Publish/subscribe of job events. It is the single writer of every job's {@link JobEventLog} (which HTTP
 * streams read and replay from) and of its {@link EventJournal} on disk, when it has one, and forwards each new
 * event to actor subscribers, in publication order. A journal that cannot be written is reported and then left
 * alone: the job and its streams go on from memory.
 */
public final class MetricsHub extends AbstractBehavior<MetricsHub.Command> {

    public sealed interface Command permits Register, Publish, Sync, Forget, Subscribe, Unsubscribe {
    }

    /**
     * Start recording the events of a job run into {@code log} (replacing an earlier run's log) and, when
     * {@code journal} is not null, into that journal (whose {@link EventJournal#log()} is {@code log}).
     */
    public record Register(String jobId, JobEventLog log, EventJournal journal) implements Command {
        public Register(String jobId, JobEventLog log) {
            this(jobId, log, null);
        }
    }

    /** Force the job's journal to the device (before a checkpoint); replies when done, or at once without one. */
    public record Sync(String jobId, ActorRef<Done> replyTo) implements Command {
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
    private final Map<String, EventJournal> journals = new HashMap<>();
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
                .onMessage(Sync.class, this::onSync)
                .onMessage(Forget.class, this::onForget)
                .onMessage(Subscribe.class, this::onSubscribe)
                .onMessage(Unsubscribe.class, this::onUnsubscribe)
                .build();
    }

    private Behavior<Command> onRegister(Register register) {
        logs.put(register.jobId(), register.log());
        closeJournal(register.jobId());
        if (register.journal() != null) {
            journals.put(register.jobId(), register.journal());
        }
        return this;
    }

    private Behavior<Command> onPublish(Publish publish) {
        JobEventLog log = logs.get(publish.jobId());
        if (log == null) {
            getContext().getLog().warn("dropping an event of job {}, which has no event log", publish.jobId());
            return this;
        }
        EventJournal journal = journals.get(publish.jobId());
        if (journal != null) {
            try {
                if (!journal.append(publish.event())) {
                    return this; // a step the history already holds (recomputed after the checkpoint of a resume)
                }
            } catch (IOException e) {
                getContext().getLog().error("job {}: writing {} failed; its events are kept in memory only: {}",
                        publish.jobId(), journal.file(), e.toString());
                journals.remove(publish.jobId());
                appendToLog(log, publish.event());
            }
            if (publish.event() instanceof EndEvent) {
                closeJournal(publish.jobId());
            }
        } else {
            appendToLog(log, publish.event());
        }
        Published published = new Published(publish.jobId(), publish.event());
        subscribers.forEach(subscriber -> subscriber.tell(published));
        return this;
    }

    private static void appendToLog(JobEventLog log, JobEvent event) {
        switch (event) {
            case StepEvent step -> log.append(step);
            case EndEvent end -> log.end(end);
        }
    }

    private Behavior<Command> onSync(Sync sync) {
        EventJournal journal = journals.get(sync.jobId());
        if (journal != null) {
            try {
                journal.sync();
            } catch (IOException e) {
                getContext().getLog().error("job {}: syncing {} failed: {}", sync.jobId(), journal.file(), e.toString());
            }
        }
        sync.replyTo().tell(Done.getInstance());
        return this;
    }

    private Behavior<Command> onForget(Forget forget) {
        logs.remove(forget.jobId());
        closeJournal(forget.jobId());
        return this;
    }

    private void closeJournal(String jobId) {
        EventJournal journal = journals.remove(jobId);
        if (journal != null) {
            try {
                journal.close();
            } catch (IOException e) {
                getContext().getLog().error("job {}: closing {} failed: {}", jobId, journal.file(), e.toString());
            }
        }
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
