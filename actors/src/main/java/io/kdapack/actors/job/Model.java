package io.kdapack.actors.job;

import io.kdapack.actors.pipeline.BatchLoss;
import io.kdapack.actors.pipeline.MicroBatchLoss;
import io.kdapack.actors.pipeline.OptimizerUpdate;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.actors.pipeline.StepCompute;
import io.kdapack.actors.pipeline.StepLoss;
import io.kdapack.actors.pipeline.TrainingBackend;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.Queue;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.pattern.StatusReply;

/**
 * Model stage: owns the job's {@link StepCompute} (weights, gradients, optimizer, checkpoints). Spawn it on
 * the pinned compute dispatcher so that every compute call, creation and close included, runs on one thread.
 *
 * <p>For a {@link RunStep} it hands the step's M micro-batches, pulled from the segmenter, to one
 * {@link StepCompute#forwardBackward} call (a step's loss weights may depend on all its loss masks, so the
 * micro-batches travel together instead of being read a second time) and the M losses to the loss actor. Work
 * pulling, one step ahead: when a step's passes are done it already asks for the next step's micro-batches (never past
 * the job's last one), so that they are in its mailbox when the next {@link RunStep} comes instead of costing round
 * trips between the steps; it holds at most one step's micro-batches at a time. A micro-batch that does not arrive within the
 * pull timeout fails the stage. {@link Evaluate} requests that arrive during a step wait until its optimizer step is applied, so
 * they never come between the micro-batches of a step; at most {@link #MAX_WAITING_EVALUATIONS} wait, later
 * ones are refused as busy.
 */
public final class Model extends AbstractBehavior<Model.Command> {

    public sealed interface Command permits Restore, RunStep, ApplyOptimizer, SaveCheckpoint, Evaluate, Pulled {
    }

    /** Restore the newest checkpoint; replies the steps it holds. */
    public record Restore(ActorRef<Restored> replyTo) implements Command {
    }

    public record Restored(long step) {
    }

    /**
     * Run forward/backward on micro-batches {@code firstIndex …} {@code firstIndex + microBatches − 1}; the job's
     * micro-batches end before {@code endIndex} (none is pulled from there on).
     */
    public record RunStep(long step, long firstIndex, int microBatches, long endIndex,
                          ActorRef<Segmenter.Command> segmenter, ActorRef<Loss.Command> loss) implements Command {
    }

    /** Apply the optimizer to the accumulated gradients of {@code loss.step()}. */
    public record ApplyOptimizer(StepLoss loss, ActorRef<Applied> replyTo) implements Command {
    }

    public record Applied(long step, OptimizerUpdate update) {
    }

    public record SaveCheckpoint(long step, ActorRef<Saved> replyTo) implements Command {
    }

    public record Saved(long step) {
    }

    /** Loss of a packed batch under the current weights; a bad batch is answered with an error, not a failure. */
    public record Evaluate(MicroBatch batch, ActorRef<StatusReply<BatchLoss>> replyTo) implements Command {
    }

    private record Pulled(Segmenter.Delivered delivered, Throwable failure) implements Command {
    }

    static final int MAX_WAITING_EVALUATIONS = 64;

    private final TrainingBackend backend;
    private final Duration pullTimeout;
    private StepCompute compute;
    private RunStep current;
    /** Micro-batches delivered and not yet computed, by global index (replies of concurrent pulls may cross). */
    private final SortedMap<Long, MicroBatch> pulled = new TreeMap<>();
    /** The index the next pull will deliver: pulls are answered in index order. */
    private long nextPullIndex = -1;
    /** True from a {@link RunStep} until its {@link ApplyOptimizer}: gradients are partly accumulated. */
    private boolean inStep;
    private final Queue<Evaluate> waitingEvaluations = new ArrayDeque<>();

    public static Behavior<Command> create(TrainingBackend backend, Duration pullTimeout) {
        return Behaviors.setup(context -> new Model(context, backend, pullTimeout));
    }

    private Model(ActorContext<Command> context, TrainingBackend backend, Duration pullTimeout) {
        super(context);
        this.backend = backend;
        this.pullTimeout = pullTimeout;
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Restore.class, this::onRestore)
                .onMessage(RunStep.class, this::onRunStep)
                .onMessage(Pulled.class, this::onPulled)
                .onMessage(ApplyOptimizer.class, this::onApplyOptimizer)
                .onMessage(SaveCheckpoint.class, this::onSaveCheckpoint)
                .onMessage(Evaluate.class, this::onEvaluate)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    private Behavior<Command> onRestore(Restore restore) throws Exception {
        restore.replyTo().tell(new Restored(compute().restoreLatestCheckpoint()));
        return this;
    }

    private Behavior<Command> onRunStep(RunStep step) throws Exception {
        if (current != null) {
            throw new IllegalStateException("step " + step.step() + " requested while step " + current.step() + " runs");
        }
        if (nextPullIndex < 0) {
            nextPullIndex = step.firstIndex();
        }
        current = step;
        inStep = true;
        pullUpTo(step.firstIndex() + step.microBatches());
        return computeIfComplete();
    }

    /** Asks for every micro-batch before {@code end} (and before the job's end) not yet asked for. */
    private void pullUpTo(long end) {
        long step = current.step();
        for (long last = Math.min(end, current.endIndex()); nextPullIndex < last; nextPullIndex++) {
            getContext().ask(Segmenter.Delivered.class, current.segmenter(), pullTimeout, Segmenter.Pull::new,
                    (delivered, failure) -> new Pulled(delivered, failure == null ? null
                            : new TimeoutException("no micro-batch from the loader/segmenter within " + pullTimeout
                                    + " (step " + step + "): " + failure.getMessage())));
        }
    }

    private Behavior<Command> onPulled(Pulled delivery) throws Exception {
        if (delivery.failure() != null) {
            throw (Exception) delivery.failure();
        }
        long index = delivery.delivered().index();
        if (index >= nextPullIndex || pulled.put(index, delivery.delivered().batch()) != null) {
            throw new IllegalStateException("micro-batch " + index + " arrived unasked for (next asked: "
                    + nextPullIndex + ")");
        }
        return computeIfComplete();
    }

    /** Runs the current step once all its micro-batches are here, then asks for the next step's. */
    private Behavior<Command> computeIfComplete() throws Exception {
        if (current == null) {
            return this;
        }
        long first = current.firstIndex();
        int m = current.microBatches();
        if (!pulled.isEmpty() && pulled.firstKey() < first) {
            throw new IllegalStateException("micro-batch " + pulled.firstKey() + " arrived, expected " + first);
        }
        SortedMap<Long, MicroBatch> step = pulled.headMap(first + m);
        if (step.size() < m) {
            return this;
        }
        List<MicroBatch> stepBatches = List.copyOf(step.values());
        step.clear();
        List<MicroBatchLoss> losses = compute.forwardBackward(stepBatches);
        if (losses.size() != m) {
            throw new IllegalStateException("forwardBackward returned " + losses.size() + " losses for " + m
                    + " micro-batches");
        }
        for (int i = 0; i < m; i++) {
            MicroBatch batch = stepBatches.get(i);
            current.loss().tell(new Loss.Accumulate(current.step(), m, losses.get(i), batch.size(), batch.segmentCount()));
        }
        pullUpTo(first + 2L * m);
        current = null;
        return this;
    }

    private Behavior<Command> onApplyOptimizer(ApplyOptimizer apply) throws Exception {
        apply.replyTo().tell(new Applied(apply.loss().step(), compute().optimizerStep(apply.loss())));
        inStep = false;
        while (!waitingEvaluations.isEmpty()) {
            evaluate(waitingEvaluations.remove());
        }
        return this;
    }

    private Behavior<Command> onSaveCheckpoint(SaveCheckpoint save) throws Exception {
        compute().saveCheckpoint(save.step());
        save.replyTo().tell(new Saved(save.step()));
        return this;
    }

    private Behavior<Command> onEvaluate(Evaluate evaluate) {
        if (!inStep) {
            evaluate(evaluate);
        } else if (waitingEvaluations.size() < MAX_WAITING_EVALUATIONS) {
            waitingEvaluations.add(evaluate);
        } else {
            evaluate.replyTo().tell(StatusReply.error("the model is busy: " + MAX_WAITING_EVALUATIONS
                    + " evaluations are already waiting for the current step to finish"));
        }
        return this;
    }

    private void evaluate(Evaluate evaluate) {
        try {
            evaluate.replyTo().tell(StatusReply.success(compute().evaluate(evaluate.batch())));
        } catch (Exception e) {
            evaluate.replyTo().tell(StatusReply.error(e.getMessage() == null ? e.toString() : e.getMessage()));
        }
    }

    private StepCompute compute() throws Exception {
        if (compute == null) {
            compute = backend.createCompute();
        }
        return compute;
    }

    private Behavior<Command> onPostStop(PostStop signal) throws Exception {
        if (compute != null) {
            compute.close();
        }
        return this;
    }
}
