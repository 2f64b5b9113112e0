package io.kdapack.actors.job;

import io.kdapack.training.pipeline.RawMicroBatch;
import io.kdapack.training.pipeline.SampleSource;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Loader stage: reads micro-batches in Megatron order, one per {@link Fetch}, starting at a given index.
 * It reads nothing ahead on its own; the segmenter's outstanding fetches bound how far it runs ahead.
 * A failing read throws, which stops this actor and fails the job.
 */
public final class Loader extends AbstractBehavior<Loader.Command> {

    public sealed interface Command permits Fetch {
    }

    /** Read the next micro-batch and send it to {@code replyTo}. */
    public record Fetch(ActorRef<Loaded> replyTo) implements Command {
    }

    /** Reply to {@link Fetch}. */
    public record Loaded(RawMicroBatch batch) {
    }

    private final SampleSource source;
    private long nextIndex;

    public static Behavior<Command> create(SampleSource source, long firstIndex) {
        return Behaviors.setup(context -> new Loader(context, source, firstIndex));
    }

    private Loader(ActorContext<Command> context, SampleSource source, long firstIndex) {
        super(context);
        this.source = source;
        this.nextIndex = firstIndex;
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Fetch.class, this::onFetch)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    private Behavior<Command> onFetch(Fetch fetch) throws Exception {
        long index = nextIndex;
        RawMicroBatch batch = JobOutOfMemory.guard("loading micro-batch " + index, () -> source.load(index));
        if (batch.index() != nextIndex) {
            throw new IllegalStateException("sample source returned micro-batch " + batch.index() + " for index " + nextIndex);
        }
        nextIndex++;
        fetch.replyTo().tell(new Loaded(batch));
        return this;
    }

    private Behavior<Command> onPostStop(PostStop signal) throws Exception {
        source.close();
        return this;
    }
}
