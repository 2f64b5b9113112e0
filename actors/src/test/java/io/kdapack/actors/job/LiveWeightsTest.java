package io.kdapack.actors.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.MicroBatchLoss;
import io.kdapack.training.pipeline.OptimizerUpdate;
import io.kdapack.training.pipeline.PipelineSettings;
import io.kdapack.training.pipeline.RawMicroBatch;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;
import io.kdapack.training.pipeline.WeightSnapshot;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.Semaphore;
import java.util.stream.IntStream;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link JobManager.SnapshotWeights}: a running job's weights as of a step boundary. The test job's optimizer step s
 * sets every weight of its four parameters to s, one parameter at a time with a pause between them, so a copy taken
 * inside an update would hold two values.
 */
@ExtendWith(TestKitJUnit5Extension.class)
class LiveWeightsTest {

    @JUnit5TestKit
    public ActorTestKit testKit = new JUnit5TestKitBuilder().build();

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final PipelineSettings SETTINGS =
            new PipelineSettings(2, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30));
    private static final int PARAMETERS = 4;
    private static final int SIZE = 20_000;

    /** Steps of one micro-batch; with {@code gate} each micro-batch waits for a permit. */
    private static TrainingBackend backend(int steps, Semaphore gate) {
        List<Parameter> parameters = IntStream.range(0, PARAMETERS)
                .mapToObj(i -> Parameter.filled("w" + i, 0f, SIZE)).toList();
        return new TrainingBackend() {
            @Override
            public TrainingPlan plan() {
                return new TrainingPlan(steps, 1, steps);
            }

            @Override
            public SampleSource samples() {
                return index -> {
                    if (gate != null) {
                        gate.acquire();
                    }
                    return new RawMicroBatch(index, 1, 3, new int[] {1, 2, 3}, new int[] {3});
                };
            }

            @Override
            public BatchSegmenter segmenter() {
                return raw -> new MicroBatch(1, 2, new int[] {1, 2}, new int[] {2, 3}, new float[] {1, 1},
                        new int[] {0, 1}, new int[] {1, 1}, null, null);
            }

            @Override
            public StepCompute createCompute() {
                return new StepCompute() {
                    @Override
                    public long restoreLatestCheckpoint() {
                        return 0;
                    }

                    @Override
                    public List<MicroBatchLoss> forwardBackward(List<MicroBatch> microBatches) {
                        return microBatches.stream().map(b -> new MicroBatchLoss(new LossReport(1, 2), null)).toList();
                    }

                    @Override
                    public OptimizerUpdate optimizerStep(StepLoss accumulated) throws InterruptedException {
                        for (Parameter p : parameters) {
                            java.util.Arrays.fill(p.values(), accumulated.step());
                            Thread.sleep(2);
                        }
                        return new OptimizerUpdate(0, 1e-3);
                    }

                    @Override
                    public BatchLoss evaluate(MicroBatch batch) {
                        throw new UnsupportedOperationException();
                    }

                    @Override
                    public WeightSnapshot snapshotWeights(long step) {
                        return WeightSnapshot.of(step, null, parameters);
                    }

                    @Override
                    public void saveCheckpoint(long step) {
                    }
                };
            }
        };
    }

    private ActorRef<JobManager.Command> startJob(String id, TrainingBackend backend) {
        ActorRef<JobManager.Command> manager = testKit.spawn(JobManager.create(SETTINGS, 16));
        TestProbe<StatusReply<JobStatus>> started = testKit.createTestProbe();
        manager.tell(new JobManager.StartJob(id, backend, started.getRef()));
        assertTrue(started.receiveMessage(WAIT).isSuccess());
        return manager;
    }

    private StatusReply<WeightSnapshot> snapshot(ActorRef<JobManager.Command> manager, String id, long unlessStep) {
        TestProbe<StatusReply<WeightSnapshot>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.SnapshotWeights(id, unlessStep, reply.getRef()));
        return reply.receiveMessage(WAIT);
    }

    private JobStatus status(ActorRef<JobManager.Command> manager, String id) {
        TestProbe<Optional<JobHandle>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.GetJob(id, reply.getRef()));
        return reply.receiveMessage(WAIT).orElseThrow().status();
    }

    @Test
    void snapshotsTakenWhileTheJobTrainsAreNeverHalfAnUpdate() {
        ActorRef<JobManager.Command> manager = startJob("live", backend(40, null));
        TreeSet<Long> steps = new TreeSet<>();
        while (!status(manager, "live").state().isTerminal()) {
            StatusReply<WeightSnapshot> reply = snapshot(manager, "live", -1);
            if (reply.isError()) {
                continue; // before step 1, or the job ended meanwhile
            }
            WeightSnapshot snapshot = reply.getValue();
            steps.add(snapshot.step());
            assertEquals(PARAMETERS, snapshot.values().size());
            assertEquals(4L * PARAMETERS * SIZE, snapshot.bytes());
            for (Map.Entry<String, float[]> weights : snapshot.values().entrySet()) {
                for (float v : weights.getValue()) {
                    if (v != snapshot.step()) {
                        throw new AssertionError(weights.getKey() + " holds " + v + " in the snapshot of step "
                                + snapshot.step() + ": half an update");
                    }
                }
            }
        }
        assertTrue(steps.size() >= 2, "snapshots of several steps were taken during training: " + steps);
    }

    @Test
    void aJobWithoutAStepIsRefusedAnUnchangedStepIsNotCopiedAndUnknownJobsAreNamed() {
        Semaphore gate = new Semaphore(0);
        ActorRef<JobManager.Command> manager = startJob("gated", backend(3, gate));
        StatusReply<WeightSnapshot> early = snapshot(manager, "gated", -1);
        assertTrue(early.isError());
        assertEquals(EvaluationRefused.Reason.NOT_RUNNING, ((EvaluationRefused) early.getError()).reason());
        assertTrue(early.getError().getMessage().contains("optimizer step"), early.getError().getMessage());

        gate.release();
        testKit.createTestProbe().awaitAssert(WAIT, () -> {
            assertEquals(1, status(manager, "gated").step());
            return null;
        });
        WeightSnapshot first = snapshot(manager, "gated", -1).getValue();
        assertEquals(1, first.step());
        WeightSnapshot again = snapshot(manager, "gated", 1).getValue();
        assertEquals(1, again.step());
        assertTrue(again.isUnchanged(), "nothing is copied while the step has not changed");
        assertNull(again.values());
        assertEquals(0, again.bytes());

        StatusReply<WeightSnapshot> unknown = snapshot(manager, "nope", -1);
        assertEquals(EvaluationRefused.Reason.UNKNOWN_JOB, ((EvaluationRefused) unknown.getError()).reason());
        assertTrue(unknown.getError().getMessage().contains("nope"));
        gate.release(10);
    }
}
