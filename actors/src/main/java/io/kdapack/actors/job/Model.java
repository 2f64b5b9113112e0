package io.kdapack.actors.job;

import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.OptimizerUpdate;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.WeightSnapshot;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
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
 * <p>For a {@link RunStep} it pulls the step's M micro-batches one by one from the segmenter (work pulling:
 * it asks for the next only when it has taken the previous one), hands all M to one
 * {@link StepCompute#forwardBackward} call (a step's loss weights may depend on all its loss masks, so the
 * micro-batches travel together instead of being read a second time) and the M losses to the loss actor. A
 * micro-batch that does not arrive within the pull timeout, or one out of order, fails the stage.
 * {@link Evaluate} requests that arrive during a step wait until its optimizer step is applied, so they never
 * come between the micro-batches of a step; at most {@link #MAX_WAITING_EVALUATIONS} wait, later ones are
 * refused as busy, and those still waiting when the stage stops are answered with an error.
 *
 * <p>Training comes first: evaluations run on a budget of half the time the job's steps have taken. Each
 * evaluation's time is charged against it, and one runs only while the budget is not overdrawn, so over any stretch
 * evaluations take at most about half as much compute as the steps (the job keeps about 2/3 of its step rate or more,
 * however many are sent). A large evaluation is scored in pieces of rows ({@link RowScoring}) of about a training
 * step's tokens, so a single one never holds the steps back for longer than about a step; its answer names the steps
 * of the weights of its first and last piece. An evaluation whose ticket has died meanwhile (deadline passed, client gone)
 * is dropped unrun. Every answer names the step of the weights that scored it.
 */
public final class Model extends AbstractBehavior<Model.Command> {

    public sealed interface Command permits Restore, RunStep, ApplyOptimizer, SaveCheckpoint, Evaluate, SnapshotWeights,
            Pulled {
    }

    /** Restore the newest checkpoint; replies the steps it holds. */
    public record Restore(ActorRef<Restored> replyTo) implements Command {
    }

    public record Restored(long step) {
    }

    /** Run forward/backward on micro-batches {@code firstIndex …} {@code firstIndex + microBatches − 1}. */
    public record RunStep(long step, long firstIndex, int microBatches, ActorRef<Segmenter.Command> segmenter,
                          ActorRef<Loss.Command> loss) implements Command {
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
    public record Evaluate(MicroBatch batch, EvaluationTicket ticket, ActorRef<StatusReply<BatchLoss>> replyTo)
            implements Command {
        public Evaluate(MicroBatch batch, ActorRef<StatusReply<BatchLoss>> replyTo) {
            this(batch, EvaluationTicket.UNBOUNDED, replyTo);
        }
    }

    /**
     * A copy of the weights as of the last applied optimizer step, taken in this message alone (the optimizer step runs
     * inside one message, so the copy is never half an update); replies {@link WeightSnapshot#unchanged} without
     * copying when the weights are still those of {@code unlessStep}, and an {@link EvaluationRefused} error
     * ({@code NOT_RUNNING}) while no step has been applied.
     */
    public record SnapshotWeights(long unlessStep, ActorRef<StatusReply<WeightSnapshot>> replyTo) implements Command {
    }

    private record Pulled(Segmenter.Delivered delivered, Throwable failure) implements Command {
    }

    static final int MAX_WAITING_EVALUATIONS = 64;

    private final TrainingBackend backend;
    private final Duration pullTimeout;
    private StepCompute compute;
    private RunStep current;
    /** The micro-batches of {@link #current} pulled so far, in index order. */
    private final List<MicroBatch> stepBatches = new ArrayList<>();
    /** True from a {@link RunStep} until its {@link ApplyOptimizer}: gradients are partly accumulated. */
    private boolean inStep;
    private final Queue<RowScoring> waitingEvaluations = new ArrayDeque<>();
    /** Tokens of an evaluation piece: those of the last training step (a piece costs about a forward of a step). */
    private int pieceTokens = DEFAULT_PIECE_TOKENS;
    static final int DEFAULT_PIECE_TOKENS = 4096;
    private final PipelineGauges gauges;
    /** Optimizer steps applied to the weights: the restored checkpoint's step, then one more per step. */
    private long weightsStep;
    /**
     * Evaluations may take 1/{@link #EVALUATION_SHARE} of the steps' time: half, so that however many are sent the job
     * keeps at least about 2/3 of its step rate.
     */
    static final int EVALUATION_SHARE = 2;
    /** Granted on top at every step, so that steps that cost next to nothing still let small evaluations through. */
    static final long MIN_CREDIT_PER_STEP_NANOS = 1_000_000;
    /** The steps' time / EVALUATION_SHARE minus the evaluations', in ns (at most one step's grant); evaluations run while
     *  it is >= 0. */
    private long evaluationCreditNanos;
    /** When the last step (or the restore) ended, and the evaluation time spent since. */
    private long lastStepEndNanos = System.nanoTime();
    private long evaluationNanosSinceStep;

    /** @param gauges where the number of {@link #waitingEvaluations} is shown */
    public static Behavior<Command> create(TrainingBackend backend, Duration pullTimeout, PipelineGauges gauges) {
        return Behaviors.setup(context -> new Model(context, backend, pullTimeout, gauges));
    }

    private Model(ActorContext<Command> context, TrainingBackend backend, Duration pullTimeout,
                  PipelineGauges gauges) {
        super(context);
        this.backend = backend;
        this.pullTimeout = pullTimeout;
        this.gauges = gauges;
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
                .onMessage(SnapshotWeights.class, this::onSnapshotWeights)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    private Behavior<Command> onRestore(Restore restore) throws Exception {
        weightsStep = JobOutOfMemory.guard("restoring the checkpoint", () -> compute().restoreLatestCheckpoint());
        lastStepEndNanos = System.nanoTime();
        restore.replyTo().tell(new Restored(weightsStep));
        return this;
    }

    private Behavior<Command> onRunStep(RunStep step) {
        if (current != null) {
            throw new IllegalStateException("step " + step.step() + " requested while step " + current.step() + " runs");
        }
        current = step;
        stepBatches.clear();
        inStep = true;
        pullNext();
        return this;
    }

    private void pullNext() {
        long step = current.step();
        getContext().ask(Segmenter.Delivered.class, current.segmenter(), pullTimeout, Segmenter.Pull::new,
                (delivered, failure) -> new Pulled(delivered, failure == null ? null
                        : new TimeoutException("no micro-batch from the loader/segmenter within " + pullTimeout
                                + " (step " + step + "): " + failure.getMessage())));
    }

    private Behavior<Command> onPulled(Pulled pulled) throws Exception {
        if (pulled.failure() != null) {
            throw (Exception) pulled.failure();
        }
        long expected = current.firstIndex() + stepBatches.size();
        if (pulled.delivered().index() != expected) {
            throw new IllegalStateException("micro-batch " + pulled.delivered().index() + " arrived, expected " + expected);
        }
        stepBatches.add(pulled.delivered().batch());
        if (stepBatches.size() < current.microBatches()) {
            pullNext();
            return this;
        }
        List<MicroBatch> batches = List.copyOf(stepBatches);
        pieceTokens = Math.max(1, batches.stream().mapToInt(MicroBatch::size).sum());
        List<MicroBatchLoss> losses = JobOutOfMemory.guard("in forward/backward of step " + current.step(),
                () -> compute.forwardBackward(batches));
        if (losses.size() != current.microBatches()) {
            throw new IllegalStateException("forwardBackward returned " + losses.size() + " losses for "
                    + current.microBatches() + " micro-batches");
        }
        for (int m = 0; m < losses.size(); m++) {
            MicroBatch batch = stepBatches.get(m);
            current.loss().tell(new Loss.Accumulate(current.step(), current.microBatches(), losses.get(m), batch.size(),
                    batch.segmentCount()));
        }
        stepBatches.clear();
        current = null;
        return this;
    }

    private Behavior<Command> onApplyOptimizer(ApplyOptimizer apply) throws Exception {
        apply.replyTo().tell(new Applied(apply.loss().step(), JobOutOfMemory.guard("in the optimizer step",
                () -> compute().optimizerStep(apply.loss()))));
        // The step's time is the wall time since the last step ended, less the evaluations run in it: what sets the
        // step rate. Unspent budget is not banked beyond one step's grant: a job that trained alone for an hour must
        // not then spend half an hour on evaluations at once.
        long now = System.nanoTime();
        long grant = (now - lastStepEndNanos - evaluationNanosSinceStep) / EVALUATION_SHARE + MIN_CREDIT_PER_STEP_NANOS;
        evaluationCreditNanos = Math.min(evaluationCreditNanos + grant, grant);
        lastStepEndNanos = now;
        evaluationNanosSinceStep = 0;
        weightsStep = apply.loss().step();
        inStep = false;
        scoreWaiting();
        return this;
    }

    private Behavior<Command> onSaveCheckpoint(SaveCheckpoint save) throws Exception {
        JobOutOfMemory.guard("saving the checkpoint", () -> {
            compute().saveCheckpoint(save.step());
            return null;
        });
        save.replyTo().tell(new Saved(save.step()));
        return this;
    }

    private Behavior<Command> onEvaluate(Evaluate evaluate) {
        if (waitingEvaluations.size() < MAX_WAITING_EVALUATIONS) {
            waitingEvaluations.add(new RowScoring(evaluate));
            scoreWaiting();
        } else {
            evaluate.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.BUSY,
                    "the model is busy: " + MAX_WAITING_EVALUATIONS
                            + " evaluations are already waiting for the current step to finish")));
        }
        return this;
    }

    private Behavior<Command> onSnapshotWeights(SnapshotWeights snapshot) {
        if (compute == null || weightsStep == 0) {
            snapshot.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING,
                    "the job has not finished an optimizer step yet: its weights cannot be served before step 1")));
        } else if (weightsStep == snapshot.unlessStep()) {
            snapshot.replyTo().tell(StatusReply.success(WeightSnapshot.unchanged(weightsStep)));
        } else {
            try {
                snapshot.replyTo().tell(StatusReply.success(compute.snapshotWeights(weightsStep)));
            } catch (Exception | OutOfMemoryError e) { // serving is refused; the job's own state is untouched
                snapshot.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.BUSY,
                        "copying the weights of step " + weightsStep + " failed: " + e)));
            }
        }
        return this;
    }

    /** Answers an evaluation whose ticket has died; true if it had. */
    private static boolean answeredIfDead(Evaluate evaluate) {
        String why = evaluate.ticket().whyDead();
        if (why != null) {
            evaluate.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.BUSY, why)));
        }
        return why != null;
    }

    /**
     * Between steps, while the budget allows: scores the next piece of the first waiting evaluation, answering each
     * when its last piece is done (and dropping those whose ticket died).
     */
    private void scoreWaiting() {
        while (!inStep && !waitingEvaluations.isEmpty() && evaluationCreditNanos >= 0) {
            RowScoring scoring = waitingEvaluations.peek();
            if (answeredIfDead(scoring.request) || scorePiece(scoring)) {
                waitingEvaluations.remove();
            }
        }
        gauges.setWaitingEvaluations(waitingEvaluations.size());
    }

    /** Scores one piece; true when the evaluation is over (answered, or failed). */
    private boolean scorePiece(RowScoring scoring) {
        Evaluate evaluate = scoring.request;
        long start = System.nanoTime();
        try {
            MicroBatch piece = scoring.nextPiece(pieceTokens);
            scoring.add(piece, compute().evaluate(piece), weightsStep);
            if (scoring.done()) {
                evaluate.replyTo().tell(StatusReply.success(scoring.result()));
                return true;
            }
            return false;
        } catch (OutOfMemoryError e) {
            // The batch's allocations are garbage now; the job's own state is untouched, so it trains on.
            evaluate.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.BUSY,
                    "out of memory evaluating the batch (" + e.getMessage() + "); send a smaller one")));
            return true;
        } catch (Exception e) {
            evaluate.replyTo().tell(StatusReply.error(e.getMessage() == null ? e.toString() : e.getMessage()));
            return true;
        } finally {
            long spent = System.nanoTime() - start;
            evaluationCreditNanos -= spent;
            evaluationNanosSinceStep += spent;
        }
    }

    private StepCompute compute() throws Exception {
        if (compute == null) {
            compute = JobOutOfMemory.guard("building the model", backend::createCompute);
        }
        return compute;
    }

    private Behavior<Command> onPostStop(PostStop signal) throws Exception {
        // The step they wait for will not finish: answer now rather than leave the callers to time out.
        for (RowScoring waiting : waitingEvaluations) {
            waiting.request.replyTo().tell(StatusReply.error(new EvaluationRefused(EvaluationRefused.Reason.NOT_RUNNING,
                    "the job stopped before its current step finished; the evaluation was not run")));
        }
        waitingEvaluations.clear();
        gauges.setWaitingEvaluations(0);
        if (compute != null) {
            compute.close();
        }
        return this;
    }
}
