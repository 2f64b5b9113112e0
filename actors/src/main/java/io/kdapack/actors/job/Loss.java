package io.kdapack.actors.job;

import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.StepLoss;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Loss stage: gathers the micro-batch losses of an optimizer step and, once all M arrived, reduces them the way
 * Megatron does ({@link StepLoss#reduce}, the same reduction the direct training loop logs) and reports the step's
 * {@link StepLoss}.
 */
public final class Loss extends AbstractBehavior<Loss.Command> {

    public sealed interface Command permits Accumulate {
    }

    /** Micro-batch losses of {@code step}, one of {@code microBatches}. */
    public record Accumulate(long step, int microBatches, MicroBatchLoss loss, int positions, int segments)
            implements Command {
    }

    private final ActorRef<StepLoss> reportTo;
    private long step = -1;
    private final List<MicroBatchLoss> received = new ArrayList<>();
    private long positions;
    private long segments;

    public static Behavior<Command> create(ActorRef<StepLoss> reportTo) {
        return Behaviors.setup(context -> new Loss(context, reportTo));
    }

    private Loss(ActorContext<Command> context, ActorRef<StepLoss> reportTo) {
        super(context);
        this.reportTo = reportTo;
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder().onMessage(Accumulate.class, this::onAccumulate).build();
    }

    private Behavior<Command> onAccumulate(Accumulate part) {
        if (received.isEmpty()) {
            step = part.step();
            positions = 0;
            segments = 0;
        } else if (part.step() != step) {
            throw new IllegalStateException("loss of step " + part.step() + " arrived while step " + step
                    + " has " + received.size() + " of its micro-batches");
        }
        received.add(part.loss());
        positions += part.positions();
        segments += part.segments();
        if (received.size() == part.microBatches()) {
            reportTo.tell(StepLoss.reduce(step, received, positions, segments));
            received.clear();
        }
        return this;
    }
}
