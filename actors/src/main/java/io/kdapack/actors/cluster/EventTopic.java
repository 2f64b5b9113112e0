package io.kdapack.actors.cluster;

import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * The cluster's one topic of job events (Pekko's distributed pub-sub, {@link Topic}): workers publish every event of
 * their jobs, each api node subscribes once. Delivery is at most once (a message in flight to a member that dies, or
 * published before the topic's registry has reached a new subscriber, is lost), which is why readers treat it as the
 * fast path and the job's {@code events.jsonl} as the record: see {@link EventMirrors}.
 */
public final class EventTopic {

    static final String NAME = "kdapack-job-events";

    private EventTopic() {
    }

    /** The topic actor of one node (spawn it once per node). */
    public static Behavior<Topic.Command<JobEventMessage>> create() {
        return Topic.create(JobEventMessage.class, NAME);
    }
}
