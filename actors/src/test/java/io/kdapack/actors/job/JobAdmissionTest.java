package io.kdapack.actors.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.MemoryEstimate;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.OptimizerUpdate;
import io.kdapack.training.pipeline.PipelineSettings;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The job manager's admission control: memory budget, running slots, the queue, and jobs that run out of memory. */
@ExtendWith(TestKitJUnit5Extension.class)
class JobAdmissionTest {

    @JUnit5TestKit
    public ActorTestKit testKit = new JUnit5TestKitBuilder().build();

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final PipelineSettings SETTINGS =
            new PipelineSettings(2, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30));

    /** A scripted backend that claims {@code bytes} of memory. */
    private record Sized(TrainingBackend backend, long bytes) implements TrainingBackend {
        @Override
        public TrainingPlan plan() {
            return backend.plan();
        }

        @Override
        public SampleSource samples() {
            return backend.samples();
        }

        @Override
        public BatchSegmenter segmenter() {
            return backend.segmenter();
        }

        @Override
        public StepCompute createCompute() throws Exception {
            return backend.createCompute();
        }

        @Override
        public MemoryEstimate memoryEstimate() {
            return new MemoryEstimate(bytes, "model.hidden_size", "weights " + bytes + " B");
        }
    }

    private StatusReply<JobStatus> start(ActorRef<JobManager.Command> manager, String id, TrainingBackend backend) {
        TestProbe<StatusReply<JobStatus>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.StartJob(id, backend, reply.getRef()));
        return reply.receiveMessage(WAIT);
    }

    private JobStatus status(ActorRef<JobManager.Command> manager, String id) {
        TestProbe<Optional<JobHandle>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.GetJob(id, reply.getRef()));
        return reply.receiveMessage(WAIT).orElseThrow().status();
    }

    private JobManager.Capacity capacity(ActorRef<JobManager.Command> manager) {
        TestProbe<JobManager.Capacity> reply = testKit.createTestProbe();
        manager.tell(new JobManager.GetCapacity(reply.getRef()));
        return reply.receiveMessage(WAIT);
    }

    private JobStatus awaitState(ActorRef<JobManager.Command> manager, String id, JobState state) {
        return testKit.createTestProbe().awaitAssert(WAIT, () -> {
            JobStatus status = status(manager, id);
            assertEquals(state, status.state(), () -> "job " + id + ": " + status);
            return status;
        });
    }

    @Test
    void aJobLargerThanTheBudgetIsRefusedNamingItsKeyAndNothingElseChanges() {
        var manager = testKit.spawn(JobManager.create(SETTINGS, 8, new Admission(1000, 2, 1)));
        StatusReply<JobStatus> refused = start(manager, "huge", new Sized(new ScriptedTraining(3, 1, 10), 1001));
        JobRefused error = assertInstanceOf(JobRefused.class, refused.getError());
        assertEquals(JobRefused.Reason.TOO_LARGE, error.reason());
        assertEquals("model.hidden_size", error.field());
        assertTrue(error.getMessage().contains("1001 B") && error.getMessage().contains("server.memory_budget"),
                error.getMessage());
        assertEquals(0, capacity(manager).running() + capacity(manager).queued(), "nothing runs or waits");

        assertTrue(start(manager, "fits", new Sized(new ScriptedTraining(3, 1, 10), 1000)).isSuccess());
        awaitState(manager, "fits", JobState.SUCCEEDED);
    }

    @Test
    void jobsBeyondTheSlotsOrTheMemoryWaitInTheQueueAndBeyondTheQueueAreRefused() {
        var manager = testKit.spawn(JobManager.create(SETTINGS, 8, new Admission(1000, 2, 1)));
        Semaphore gate = new Semaphore(0);
        assertEquals(JobState.STARTING, start(manager, "a", new Sized(new ScriptedTraining(2, 1, 10).gated(gate), 600))
                .getValue().state());
        // 600 + 600 > 1000: a free slot, but not the memory.
        StatusReply<JobStatus> second = start(manager, "b", new Sized(new ScriptedTraining(2, 1, 10), 600));
        assertEquals(JobState.QUEUED, second.getValue().state());
        assertEquals(null, second.getValue().startedAt(), "a queued job has not started");
        StatusReply<JobStatus> third = start(manager, "c", new Sized(new ScriptedTraining(2, 1, 10), 10));
        assertEquals(JobRefused.Reason.FULL, assertInstanceOf(JobRefused.class, third.getError()).reason(),
                "queue of one is full");
        JobManager.Capacity full = capacity(manager);
        assertEquals(1, full.running());
        assertEquals(1, full.queued());
        assertEquals(600, full.reservedBytes());
        assertTrue(!full.canTakeWork() || full.running() < 2, "slots free but memory short still takes work: " + full);

        gate.release(100);
        awaitState(manager, "a", JobState.SUCCEEDED);
        JobStatus b = awaitState(manager, "b", JobState.SUCCEEDED);
        assertTrue(b.startedAt() != null, "the queued job started once the first ended");
    }

    @Test
    void aQueuedJobCanBeCancelledAndAShutdownStopsWaitingJobsResumably() {
        var manager = testKit.spawn(JobManager.create(SETTINGS, 8, new Admission(1000, 1, 2)));
        Semaphore gate = new Semaphore(0);
        start(manager, "running", new Sized(new ScriptedTraining(2, 1, 10).gated(gate), 1));
        start(manager, "cancel-me", new Sized(new ScriptedTraining(2, 1, 10), 1));
        start(manager, "stop-me", new Sized(new ScriptedTraining(2, 1, 10), 1));
        assertEquals(2, capacity(manager).queued());
        assertTrue(capacity(manager).canTakeWork() == false, "one slot taken, both queue places taken");

        TestProbe<StatusReply<Optional<JobStatus>>> cancelled = testKit.createTestProbe();
        manager.tell(new JobManager.CancelJob("cancel-me", cancelled.getRef()));
        assertEquals(JobState.CANCELLED, cancelled.receiveMessage(WAIT).getValue().orElseThrow().state());

        TestProbe<org.apache.pekko.Done> stopped = testKit.createTestProbe();
        manager.tell(new JobManager.StopAll(stopped.getRef()));
        gate.release(100);
        stopped.receiveMessage(WAIT);
        assertEquals(JobState.STOPPED, status(manager, "stop-me").state());
        assertTrue(status(manager, "stop-me").state().isResumable());
        assertTrue(capacity(manager).shuttingDown());
    }

    /** A compute that runs out of heap in its first forward pass, as a too-large model does. */
    private static final class OutOfMemoryTraining extends ScriptedTrainingDelegate {
        OutOfMemoryTraining() {
            super(new ScriptedTraining(3, 1, 10));
        }

        @Override
        public StepCompute createCompute() throws Exception {
            StepCompute inner = super.createCompute();
            return new StepCompute() {
                @Override
                public long restoreLatestCheckpoint() throws Exception {
                    return inner.restoreLatestCheckpoint();
                }

                @Override
                public List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) {
                    throw new OutOfMemoryError("Java heap space");
                }

                @Override
                public OptimizerUpdate optimizerStep(StepLoss accumulated) throws Exception {
                    return inner.optimizerStep(accumulated);
                }

                @Override
                public BatchLoss evaluate(MicroBatch batch) throws Exception {
                    return inner.evaluate(batch);
                }

                @Override
                public void saveCheckpoint(long step) throws Exception {
                    inner.saveCheckpoint(step);
                }

                @Override
                public void close() throws java.io.IOException {
                    inner.close();
                }
            };
        }
    }

    @Test
    void aJobThatRunsOutOfMemoryFailsAloneAndTheOthersTrainOn() {
        var manager = testKit.spawn(JobManager.create(SETTINGS, 8, new Admission(1000, 2, 0)));
        Semaphore gate = new Semaphore(0);
        start(manager, "healthy", new ScriptedTraining(4, 1, 10).gated(gate));
        start(manager, "oom", new OutOfMemoryTraining());
        JobStatus failed = awaitState(manager, "oom", JobState.FAILED);
        assertTrue(JobOutOfMemory.describes(failed.error()), failed.error());
        assertTrue(failed.error().contains("Java heap space") && failed.error().contains("model stage"), failed.error());

        gate.release(100);
        awaitState(manager, "healthy", JobState.SUCCEEDED);
        assertTrue(start(manager, "after", new ScriptedTraining(2, 1, 10)).isSuccess(), "the server takes new work");
        awaitState(manager, "after", JobState.SUCCEEDED);
    }
}
