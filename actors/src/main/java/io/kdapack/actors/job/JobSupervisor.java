package io.kdapack.actors.job;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.PipelineSettings;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;
import io.kdapack.training.pipeline.WeightSnapshot;
import java.time.Instant;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.ChildFailed;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.pattern.StatusReply;

/**
 * Runs one job: spawns and watches its stages (loader, segmenter, model on the pinned compute dispatcher,
 * loss), drives the optimizer steps, saves checkpoints and publishes one {@link StepEvent} per step and a
 * final {@link EndEvent}.
 *
 * <p>Failure: a stage that throws stops and this supervisor fails the job with the stage's name and message;
 * a step or store that does not complete within its timeout fails it too, so nothing hangs silently. Either
 * way only this job ends. Cancel and checkpoint-and-stop take effect at the next step boundary, so a job
 * stops within one step and its last checkpoint is never half-written.
 */
public final class JobSupervisor extends AbstractBehavior<JobSupervisor.Command> {

    /** Dispatcher of the model stage (a {@code PinnedDispatcher}: one thread per model actor). */
    public static final String COMPUTE_DISPATCHER = "kdapack.compute-dispatcher";
    /** Dispatcher of the loader and segmenter stages, whose work may block on I/O. */
    public static final String PIPELINE_DISPATCHER = "kdapack.pipeline-dispatcher";

    public sealed interface Command permits Cancel, CheckpointAndStop, Evaluate, SnapshotWeights, Restored,
            StepLossReady, Applied, JournalSynced, Saved, Timeout {
    }

    /** Stop after the step in progress; the last checkpoint stays as it is. */
    public record Cancel() implements Command {
    }

    /** Checkpoint after the step in progress, then stop in state {@link JobState#STOPPED} (server shutdown). */
    public record CheckpointAndStop() implements Command {
    }

    public record Evaluate(MicroBatch batch, EvaluationTicket ticket, ActorRef<StatusReply<BatchLoss>> replyTo)
            implements Command {
        public Evaluate(MicroBatch batch, ActorRef<StatusReply<BatchLoss>> replyTo) {
            this(batch, EvaluationTicket.UNBOUNDED, replyTo);
        }
    }

    /** The model stage's weights as of a step boundary ({@link Model.SnapshotWeights}). */
    public record SnapshotWeights(long unlessStep, ActorRef<StatusReply<WeightSnapshot>> replyTo) implements Command {
    }

    private record Restored(long step) implements Command {
    }

    private record StepLossReady(StepLoss loss) implements Command {
    }

    private record Applied(StepLoss loss, Model.Applied applied) implements Command {
    }

    private record Saved(long step) implements Command {
    }

    /** The event journal holds every step up to the checkpoint about to be written. */
    private record JournalSynced(long step) implements Command {
    }

    /** An ask or the step timer ran out; {@code what} says what did not complete in time. */
    private record Timeout(String what) implements Command {
    }

    private static final Object STEP_TIMER = "step";

    private final String jobId;
    private final TrainingBackend backend;
    private final TrainingPlan plan;
    private final PipelineSettings settings;
    private final ActorRef<MetricsHub.Command> hub;
    private final ActorRef<JobStatus> statusTo;
    private final PipelineGauges gauges;
    private final TimerScheduler<Command> timers;
    private final ActorRef<Model.Command> model;
    private ActorRef<Segmenter.Command> segmenter;
    private ActorRef<Loss.Command> loss;
    private JobStatus status;
    private long stepStartNanos;
    private long lastCheckpoint = -1;
    private boolean cancelRequested;
    private boolean stopRequested;

    /** @param resumeStep the step the run is expected to resume from ({@link TrainingBackend#resumeStep}), shown until restored */
    public static Behavior<Command> create(String jobId, TrainingBackend backend, long resumeStep,
                                           PipelineSettings settings, ActorRef<MetricsHub.Command> hub,
                                           ActorRef<JobStatus> statusTo, PipelineGauges gauges) {
        return Behaviors.setup(context -> Behaviors.withTimers(timers ->
                new JobSupervisor(context, timers, jobId, backend, resumeStep, settings, hub, statusTo, gauges)));
    }

    private JobSupervisor(ActorContext<Command> context, TimerScheduler<Command> timers, String jobId,
                          TrainingBackend backend, long resumeStep, PipelineSettings settings,
                          ActorRef<MetricsHub.Command> hub, ActorRef<JobStatus> statusTo, PipelineGauges gauges) {
        super(context);
        this.timers = timers;
        this.jobId = jobId;
        this.backend = backend;
        this.plan = backend.plan();
        this.settings = settings;
        this.hub = hub;
        this.statusTo = statusTo;
        this.gauges = gauges;
        this.status = JobStatus.starting(jobId, resumeStep, plan.totalSteps(), Instant.now());
        statusTo.tell(status);
        model = context.spawn(Model.create(backend, settings.pullTimeout(), gauges), "model",
                DispatcherSelector.fromConfig(COMPUTE_DISPATCHER));
        context.watch(model);
        context.ask(Model.Restored.class, model, settings.storeTimeout(), Model.Restore::new,
                (restored, failure) -> failure == null ? new Restored(restored.step())
                        : new Timeout("restoring the checkpoint did not complete within " + settings.storeTimeout()));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Restored.class, this::onRestored)
                .onMessage(StepLossReady.class, this::onStepLossReady)
                .onMessage(Applied.class, this::onApplied)
                .onMessage(JournalSynced.class, this::onJournalSynced)
                .onMessage(Saved.class, this::onSaved)
                .onMessage(Timeout.class, this::onTimeout)
                .onMessage(Cancel.class, this::onCancel)
                .onMessage(CheckpointAndStop.class, this::onCheckpointAndStop)
                .onMessage(Evaluate.class, this::onEvaluate)
                .onMessage(SnapshotWeights.class, snapshot -> {
                    model.tell(new Model.SnapshotWeights(snapshot.unlessStep(), snapshot.replyTo()));
                    return this;
                })
                .onSignal(ChildFailed.class, this::onStageFailed)
                .onSignal(Terminated.class, this::onStageStopped)
                .build();
    }

    private Behavior<Command> onRestored(Restored restored) {
        long step = restored.step();
        if (step < 0 || step > plan.totalSteps()) {
            return finish(JobState.FAILED, "checkpoint holds step " + step + ", outside [0, " + plan.totalSteps() + "]");
        }
        lastCheckpoint = step;
        status = status.running(step, null);
        statusTo.tell(status);
        ActorContext<Command> context = getContext();
        DispatcherSelector pipeline = DispatcherSelector.fromConfig(PIPELINE_DISPATCHER);
        int microBatches = plan.microBatchesPerStep();
        SampleSource samples;
        BatchSegmenter batchSegmenter;
        try {
            samples = backend.samples();
            batchSegmenter = backend.segmenter();
        } catch (RuntimeException e) {
            return finish(JobState.FAILED, "starting the pipeline failed: " + e.getMessage());
        } catch (OutOfMemoryError e) { // the dataset's sample order did not fit: this job fails, nothing else
            return finish(JobState.FAILED, new JobOutOfMemory("starting the pipeline", e).getMessage());
        }
        var loader = context.spawn(Loader.create(samples, step * microBatches), "loader", pipeline);
        segmenter = context.spawn(Segmenter.create(batchSegmenter, loader, settings.prefetch(),
                (plan.totalSteps() - step) * microBatches, gauges), "segmenter", pipeline);
        loss = context.spawn(Loss.create(context.messageAdapter(StepLoss.class, StepLossReady::new)), "loss");
        context.watch(loader);
        context.watch(segmenter);
        context.watch(loss);
        return nextStepOrFinish();
    }

    private Behavior<Command> nextStepOrFinish() {
        if (cancelRequested) {
            return finish(JobState.CANCELLED, null);
        }
        if (stopRequested) {
            return lastCheckpoint == status.step() ? finish(JobState.STOPPED, null) : saveCheckpoint();
        }
        if (status.step() == plan.totalSteps()) {
            return finish(JobState.SUCCEEDED, null);
        }
        long step = status.step() + 1;
        stepStartNanos = System.nanoTime();
        int microBatches = plan.microBatchesPerStep();
        model.tell(new Model.RunStep(step, (step - 1) * microBatches, microBatches, segmenter, loss));
        timers.startSingleTimer(STEP_TIMER, new Timeout("step " + step + " did not complete within " + settings.stepTimeout()),
                settings.stepTimeout());
        return this;
    }

    private Behavior<Command> onStepLossReady(StepLossReady ready) {
        timers.cancel(STEP_TIMER);
        getContext().ask(Model.Applied.class, model, settings.stepTimeout(),
                replyTo -> new Model.ApplyOptimizer(ready.loss(), replyTo),
                (applied, failure) -> failure == null ? new Applied(ready.loss(), applied)
                        : new Timeout("optimizer step " + ready.loss().step() + " did not complete within "
                                + settings.stepTimeout()));
        return this;
    }

    private Behavior<Command> onApplied(Applied applied) {
        StepLoss stepLoss = applied.loss();
        double seconds = Math.max(1e-9, (System.nanoTime() - stepStartNanos) / 1e9);
        var update = applied.applied().update();
        double loss = stepLoss.main().mean();
        hub.tell(new MetricsHub.Publish(jobId, new StepEvent(stepLoss.step(), loss,
                stepLoss.mtpLoss(), stepLoss.positions(), stepLoss.segments(),
                update.gradNorm(), update.learningRate(), stepLoss.positions() / seconds, update.valLoss(),
                update.valMtpLoss())));
        status = status.running(stepLoss.step(), loss);
        statusTo.tell(status);
        return plan.checkpointDue(stepLoss.step()) ? saveCheckpoint() : nextStepOrFinish();
    }

    /**
     * The journal is forced to disk before the checkpoint is written, so that a checkpoint never holds a step the
     * journal could lose (a resumed run would then publish steps that do not follow the history).
     */
    private Behavior<Command> saveCheckpoint() {
        long step = status.step();
        getContext().ask(Done.class, hub, settings.storeTimeout(), replyTo -> new MetricsHub.Sync(jobId, replyTo),
                (done, failure) -> failure == null ? new JournalSynced(step)
                        : new Timeout("syncing the event journal before the checkpoint of step " + step
                                + " did not complete within " + settings.storeTimeout()));
        return this;
    }

    private Behavior<Command> onJournalSynced(JournalSynced synced) {
        long step = synced.step();
        getContext().ask(Model.Saved.class, model, settings.storeTimeout(),
                replyTo -> new Model.SaveCheckpoint(step, replyTo),
                (saved, failure) -> failure == null ? new Saved(saved.step())
                        : new Timeout("checkpoint of step " + step + " did not complete within "
                                + settings.storeTimeout()));
        return this;
    }

    private Behavior<Command> onSaved(Saved saved) {
        lastCheckpoint = saved.step();
        return nextStepOrFinish();
    }

    private Behavior<Command> onTimeout(Timeout timeout) {
        return finish(JobState.FAILED, timeout.what());
    }

    private Behavior<Command> onCancel(Cancel cancel) {
        cancelRequested = true;
        return this;
    }

    private Behavior<Command> onCheckpointAndStop(CheckpointAndStop stop) {
        stopRequested = true;
        return this;
    }

    private Behavior<Command> onEvaluate(Evaluate evaluate) {
        model.tell(new Model.Evaluate(evaluate.batch(), evaluate.ticket(), evaluate.replyTo()));
        return this;
    }

    private Behavior<Command> onStageFailed(ChildFailed failed) {
        Throwable cause = failed.getCause();
        if (cause instanceof JobOutOfMemory) {
            return finish(JobState.FAILED, cause.getMessage() + " [" + failed.getRef().path().name() + " stage]");
        }
        String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
        return finish(JobState.FAILED, failed.getRef().path().name() + " stage failed: " + message);
    }

    private Behavior<Command> onStageStopped(Terminated terminated) {
        return finish(JobState.FAILED, terminated.getRef().path().name() + " stage stopped unexpectedly");
    }

    /** Reports the terminal state and stops; the stages stop with this actor. */
    private Behavior<Command> finish(JobState state, String error) {
        status = status.finished(state, Instant.now(), error);
        statusTo.tell(status);
        hub.tell(new MetricsHub.Publish(jobId, new EndEvent(state, status.step(), error)));
        return Behaviors.stopped();
    }
}
