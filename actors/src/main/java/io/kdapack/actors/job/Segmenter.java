package io.kdapack.actors.job;

import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchSegmenter;
import java.util.ArrayDeque;
import java.util.Queue;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Segmenter stage and the prefetch buffer of the pipeline (work pulling). The model {@link Pull}s one packed
 * micro-batch at a time; the segmenter keeps {@code ready + fetchesInFlight <= prefetch} so that the next
 * micro-batches are ready while the current step computes, and memory stays bounded by {@code prefetch}
 * micro-batches (besides the M of the step the model holds) whatever the speed ratio between loading and
 * compute. It fetches exactly the job's remaining micro-batches, never one past the end of the planned sample
 * order.
 */
public final class Segmenter extends AbstractBehavior<Segmenter.Command> {

    public sealed interface Command permits Pull, WrappedLoaded {
    }

    /** Send the next packed micro-batch to {@code replyTo} as soon as there is one. */
    public record Pull(ActorRef<Delivered> replyTo) implements Command {
    }

    /** Reply to {@link Pull}: micro-batch number {@code index} of the global order. */
    public record Delivered(long index, MicroBatch batch) {
    }

    private record WrappedLoaded(Loader.Loaded loaded) implements Command {
    }

    private final BatchSegmenter segmenter;
    private final ActorRef<Loader.Command> loader;
    private final ActorRef<Loader.Loaded> loadedAdapter;
    private final int prefetch;
    private final PipelineGauges gauges;
    private final Queue<Delivered> ready = new ArrayDeque<>();
    private final Queue<ActorRef<Delivered>> waiting = new ArrayDeque<>();
    private int fetchesInFlight;
    private long fetchesLeft;

    /**
     * @param prefetch      micro-batches kept ready or in flight, at most
     * @param microBatches  micro-batches left in the job: no more are fetched
     */
    public static Behavior<Command> create(BatchSegmenter segmenter, ActorRef<Loader.Command> loader, int prefetch,
                                           long microBatches, PipelineGauges gauges) {
        if (prefetch < 1) {
            throw new IllegalArgumentException("prefetch must be >= 1, got " + prefetch);
        }
        if (microBatches < 0) {
            throw new IllegalArgumentException("microBatches must be >= 0, got " + microBatches);
        }
        return Behaviors.setup(context -> new Segmenter(context, segmenter, loader, prefetch, microBatches, gauges));
    }

    private Segmenter(ActorContext<Command> context, BatchSegmenter segmenter, ActorRef<Loader.Command> loader,
                      int prefetch, long microBatches, PipelineGauges gauges) {
        super(context);
        this.fetchesLeft = microBatches;
        this.segmenter = segmenter;
        this.loader = loader;
        this.prefetch = prefetch;
        this.gauges = gauges;
        this.loadedAdapter = context.messageAdapter(Loader.Loaded.class, WrappedLoaded::new);
        refill();
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Pull.class, this::onPull)
                .onMessage(WrappedLoaded.class, this::onLoaded)
                .build();
    }

    private Behavior<Command> onPull(Pull pull) {
        waiting.add(pull.replyTo());
        deliver();
        refill();
        return this;
    }

    private Behavior<Command> onLoaded(WrappedLoaded message) throws Exception {
        fetchesInFlight--;
        var raw = message.loaded().batch();
        ready.add(new Delivered(raw.index(), JobOutOfMemory.guard("segmenting micro-batch " + raw.index(),
                () -> segmenter.segment(raw))));
        deliver();
        refill();
        return this;
    }

    private void deliver() {
        while (!ready.isEmpty() && !waiting.isEmpty()) {
            waiting.remove().tell(ready.remove());
        }
    }

    private void refill() {
        while (ready.size() + fetchesInFlight < prefetch && fetchesLeft > 0) {
            loader.tell(new Loader.Fetch(loadedAdapter));
            fetchesInFlight++;
            fetchesLeft--;
        }
        gauges.set(ready.size(), fetchesInFlight);
    }
}
