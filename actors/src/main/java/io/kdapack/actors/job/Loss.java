package io.kdapack.actors.job;

import io.kdapack.core.loss.LossMode;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.loss.LossScaling;
import io.kdapack.actors.pipeline.MicroBatchLoss;
import io.kdapack.actors.pipeline.StepLoss;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Loss stage: accumulates the micro-batch loss reports of an optimizer step and reports the step's
 * {@link StepLoss} once all M arrived. As Megatron logs them (docs/training.md): the loss is
 * {@code Σ sums / Σ counts} over the M micro-batches, the MTP loss the mean over micro-batches of
 * {@code mtp_sum_m / mtp_count_m}.
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
    private int received;
    private LossReport main;
    private LossReport mtp;
    private final List<LossReport> mtpReports = new ArrayList<>();
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
        if (received == 0) {
            step = part.step();
            main = LossReport.EMPTY;
            mtp = part.loss().mtp() == null ? null : LossReport.EMPTY;
            mtpReports.clear();
            positions = 0;
            segments = 0;
        } else if (part.step() != step) {
            throw new IllegalStateException("loss of step " + part.step() + " arrived while step " + step
                    + " has " + received + " of its micro-batches");
        }
        if ((mtp == null) != (part.loss().mtp() == null)) {
            throw new IllegalStateException("micro-batches of step " + step + " disagree on whether there is an MTP loss");
        }
        main = main.plus(part.loss().main());
        if (mtp != null) {
            mtp = mtp.plus(part.loss().mtp());
            mtpReports.add(part.loss().mtp());
        }
        positions += part.positions();
        segments += part.segments();
        received++;
        if (received == part.microBatches()) {
            reportTo.tell(new StepLoss(step, received, main, mtp, mtp == null ? null : meanOfMeans(mtpReports), positions,
                    segments));
            received = 0;
        }
        return this;
    }

    /**
     * The mean over micro-batches of each one's token mean, computed as the training loop logs it
     * ({@code Σ_m sum_m / max(count_m, 1) / M}, the per-micro-batch objective) so that the two agree bit for bit.
     */
    private static double meanOfMeans(List<LossReport> reports) {
        return LossScaling.objective(LossMode.PER_MICROBATCH_MEAN, reports);
    }
}
