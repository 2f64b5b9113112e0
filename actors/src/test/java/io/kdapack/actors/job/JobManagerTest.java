package io.kdapack.actors.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.PipelineSettings;
import io.kdapack.training.pipeline.TrainingBackend;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@ExtendWith(TestKitJUnit5Extension.class)
class JobManagerTest {

    @JUnit5TestKit
    public ActorTestKit testKit = new JUnit5TestKitBuilder().build();

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final PipelineSettings SETTINGS =
            new PipelineSettings(3, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30));

    private ActorRef<JobManager.Command> manager(PipelineSettings settings) {
        return testKit.spawn(JobManager.create(settings, 16));
    }

    private TestProbe<MetricsHub.Published> subscribe(ActorRef<JobManager.Command> manager) {
        TestProbe<MetricsHub.Published> events = testKit.createTestProbe();
        manager.tell(new JobManager.SubscribeEvents(events.getRef()));
        // A round trip through the manager orders the subscription before any job starts.
        list(manager);
        return events;
    }

    private static void start(ActorRef<JobManager.Command> manager, String id, TrainingBackend backend,
                              ActorTestKit testKit) {
        TestProbe<StatusReply<JobStatus>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.StartJob(id, backend, reply.getRef()));
        StatusReply<JobStatus> answer = reply.receiveMessage(WAIT);
        assertTrue(answer.isSuccess(), () -> "start refused: " + answer);
    }

    private List<JobHandle> list(ActorRef<JobManager.Command> manager) {
        TestProbe<List<JobHandle>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.ListJobs(reply.getRef()));
        return reply.receiveMessage(WAIT);
    }

    private JobHandle job(ActorRef<JobManager.Command> manager, String id) {
        TestProbe<Optional<JobHandle>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.GetJob(id, reply.getRef()));
        return reply.receiveMessage(WAIT).orElseThrow();
    }

    private JobStatus awaitTerminal(ActorRef<JobManager.Command> manager, String id) {
        return testKit.createTestProbe().awaitAssert(WAIT, () -> {
            JobStatus status = job(manager, id).status();
            assertTrue(status.state().isTerminal(), () -> "still " + status);
            return status;
        });
    }

    @Test
    void stepEventsArriveInOrderWithMegatronReducedLossesThenEnd() {
        var manager = manager(SETTINGS);
        var events = subscribe(manager);
        int microBatches = 3;
        var training = new ScriptedTraining(5, microBatches, 100);
        start(manager, "ordered", training, testKit);

        for (long step = 1; step <= 5; step++) {
            MetricsHub.Published published = events.receiveMessage(WAIT);
            assertEquals("ordered", published.jobId());
            StepEvent event = (StepEvent) published.event();
            assertEquals(step, event.step());
            // Exact: the loss is one division of sums accumulated in the same order as the formula.
            assertEquals(ScriptedTraining.expectedStepLoss(step, microBatches), event.loss(), 1e-15);
            assertEquals(ScriptedTraining.expectedLr(step), event.lr());
            assertEquals((long) microBatches * ScriptedTraining.SEQ, event.tokens());
            assertEquals(2L * microBatches, event.segments(), "two 4-token documents per micro-batch");
            assertNull(event.mtpLoss());
            assertTrue(event.tokensPerS() > 0);
        }
        assertEquals(new EndEvent(JobState.SUCCEEDED, 5, null), events.receiveMessage(WAIT).event());

        JobHandle handle = job(manager, "ordered");
        assertEquals(JobState.SUCCEEDED, handle.status().state());
        assertEquals(5, handle.status().step());
        assertEquals(5, handle.events().size());
        assertEquals(List.of(5L), training.checkpoints, "checkpoint after the last step");
        assertEquals(1, training.computeThreads.size(), "all compute on one thread");
        Thread computeThread = training.computeThreads.iterator().next();
        assertTrue(computeThread.getName().contains("compute-dispatcher"), computeThread.getName());
        testKit.createTestProbe().awaitAssert(WAIT, () -> {
            assertTrue(training.computeClosed, "compute closed when the model stops");
            return null;
        });
    }

    @Test
    void theMtpLossIsLoggedAsTheMeanOfMicroBatchMeansLikeMegatron() {
        var manager = manager(SETTINGS);
        var events = subscribe(manager);
        start(manager, "mtp", new ScriptedTraining(2, 3, 100).withMtp(), testKit);
        for (long step = 1; step <= 2; step++) {
            StepEvent event = (StepEvent) events.receiveMessage(WAIT).event();
            double meanOfMeans = 0;
            for (long i = (step - 1) * 3; i < step * 3; i++) {
                meanOfMeans += ScriptedTraining.mtpReport(i).mean();
            }
            assertEquals(meanOfMeans / 3, event.mtpLoss(), 1e-15);
            assertEquals(ScriptedTraining.expectedStepLoss(step, 3), event.loss(), 1e-15);
        }
    }

    @Test
    void segmentsAreCountedAsRunsOfNonZeroIdsPerRow() {
        // Row 0: docs 1 | 2 | padding; row 1: doc 5, doc 3, doc 5 again (ids need not increase) — 5 segments.
        int[] ids = {1, 1, 2, 0, 0, 5, 5, 3, 5, 5};
        assertEquals(5, new MicroBatch(2, 5, new int[10], new int[10], new float[10], new int[10], ids, null, null)
                .segmentCount());
        // A row boundary starts a new segment even with the same id.
        assertEquals(2, new MicroBatch(2, 2, new int[4], new int[4], new float[4], new int[4], new int[] {7, 7, 7, 7},
                null, null).segmentCount());
    }

    @Test
    void megatronReductionIsNotTheMeanOfMicroBatchMeans() {
        // Guards the formula itself: with unequal counts the two reductions differ, so the test above
        // distinguishes them.
        double meanOfMeans = (ScriptedTraining.tokenLoss(0) + ScriptedTraining.tokenLoss(1)) / 2;
        assertTrue(Math.abs(meanOfMeans - ScriptedTraining.expectedStepLoss(1, 2)) > 1e-3);
    }

    @Test
    void prefetchKeepsAtMostOneStepPlusPrefetchMicroBatchesAliveWhateverTheModelSpeed() throws Exception {
        int prefetch = 3;
        int microBatches = 3;
        var settings = new PipelineSettings(prefetch, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30));
        var manager = manager(settings);
        Semaphore gate = new Semaphore(0);
        var training = new ScriptedTraining(4, microBatches, 100).gated(gate);
        start(manager, "slow-model", training, testKit);

        var probe = testKit.createTestProbe();
        for (int microBatch = 0; microBatch < 12; microBatch++) {
            // The model holds its step's micro-batches and computes `microBatch`; let the loader and segmenter run
            // as far as they will.
            long expectedIndex = microBatch;
            assertEquals(expectedIndex, training.started.poll(10, TimeUnit.SECONDS));
            int afterStep = 12 - (microBatch / microBatches + 1) * microBatches;
            probe.awaitAssert(WAIT, () -> {
                assertEquals(Math.min(prefetch, afterStep), job(manager, "slow-model").gauges().readyBatches(),
                        "segmenter fills its prefetch buffer while the model is busy");
                return null;
            });
            gate.release();
        }
        assertEquals(JobState.SUCCEEDED, awaitTerminal(manager, "slow-model").state());
        // Alive = loaded but not yet consumed by the model: the step's M in the model plus at most `prefetch` ready.
        assertEquals(microBatches + prefetch, training.maxAlive.get());
        assertEquals(12, training.loaded.get(), "the loader reads no micro-batch past the job's end");
    }

    @ParameterizedTest
    @EnumSource(ScriptedTraining.Stage.class)
    void aThrowingStageFailsItsJobWithTheReasonAndOtherJobsCarryOn(ScriptedTraining.Stage stage) {
        var manager = manager(SETTINGS);
        start(manager, "bad", new ScriptedTraining(6, 2, 100).failing(stage, 5), testKit);
        var good = new ScriptedTraining(6, 2, 3);
        start(manager, "good", good, testKit);

        JobStatus bad = awaitTerminal(manager, "bad");
        assertEquals(JobState.FAILED, bad.state());
        String stageName = stage.name().toLowerCase();
        assertTrue(bad.error().startsWith(stageName.equals("loader") || stageName.equals("segmenter")
                        ? stageName + " stage failed" : "model stage failed"), bad.error());
        assertTrue(bad.error().contains("scripted " + stageName + " failure at micro-batch 5"), bad.error());
        assertTrue(bad.step() <= 2, "micro-batch 5 belongs to step 3");
        assertNotNull(bad.finishedAt());
        assertEquals(new EndEvent(JobState.FAILED, bad.step(), bad.error()), job(manager, "bad").events().end().orElseThrow());

        JobStatus goodStatus = awaitTerminal(manager, "good");
        assertEquals(JobState.SUCCEEDED, goodStatus.state());
        assertEquals(6, goodStatus.step());
        assertEquals(List.of(3L, 6L), good.checkpoints);
    }

    /** A backend that delegates to {@code inner} but fails in one of its factory methods. */
    private static TrainingBackend brokenAt(String method, ScriptedTraining inner) {
        return new TrainingBackend() {
            private void failIf(String name) {
                if (name.equals(method)) {
                    throw new IllegalStateException(name + " is broken");
                }
            }

            @Override
            public io.kdapack.training.pipeline.TrainingPlan plan() {
                failIf("plan");
                return inner.plan();
            }

            @Override
            public io.kdapack.training.pipeline.SampleSource samples() {
                failIf("samples");
                return inner.samples();
            }

            @Override
            public io.kdapack.training.pipeline.BatchSegmenter segmenter() {
                return inner.segmenter();
            }

            @Override
            public io.kdapack.training.pipeline.StepCompute createCompute() {
                failIf("createCompute");
                return inner.createCompute();
            }
        };
    }

    @Test
    void aBackendThatCannotStartFailsOnlyItsJobAndSaysWhy() {
        var manager = manager(SETTINGS);
        TestProbe<StatusReply<JobStatus>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.StartJob("no-plan", brokenAt("plan", new ScriptedTraining(2, 1, 1)), reply.getRef()));
        assertTrue(reply.receiveMessage(WAIT).getError().getMessage().contains("plan is broken"));

        start(manager, "no-samples", brokenAt("samples", new ScriptedTraining(2, 1, 1)), testKit);
        start(manager, "no-compute", brokenAt("createCompute", new ScriptedTraining(2, 1, 1)), testKit);
        JobStatus noSamples = awaitTerminal(manager, "no-samples");
        assertEquals(JobState.FAILED, noSamples.state());
        assertEquals("starting the pipeline failed: samples is broken", noSamples.error());
        JobStatus noCompute = awaitTerminal(manager, "no-compute");
        assertEquals(JobState.FAILED, noCompute.state());
        assertEquals("model stage failed: createCompute is broken", noCompute.error());

        start(manager, "fine", new ScriptedTraining(2, 1, 1), testKit);
        assertEquals(JobState.SUCCEEDED, awaitTerminal(manager, "fine").state(), "the manager carries on");
    }

    @Test
    void aHangingLoaderFailsTheJobAtThePullTimeoutInsteadOfHanging() {
        var settings = new PipelineSettings(1, Duration.ofMillis(300), Duration.ofSeconds(30), Duration.ofSeconds(30));
        var manager = manager(settings);
        var training = new ScriptedTraining(4, 1, 100).hangingLoaderAt(2);
        try {
            start(manager, "hang", training, testKit);
            JobStatus status = awaitTerminal(manager, "hang");
            assertEquals(JobState.FAILED, status.state());
            assertEquals(2, status.step());
            assertTrue(status.error().contains("no micro-batch from the loader/segmenter"), status.error());
        } finally {
            training.releaseHang.countDown();
        }
    }

    @Test
    void cancellingStopsAfterTheStepInProgressAndKeepsOtherStepsUnrun() throws Exception {
        var manager = manager(SETTINGS);
        Semaphore gate = new Semaphore(2); // step 1 (2 micro-batches) runs freely, step 2 blocks
        var training = new ScriptedTraining(10, 2, 1).gated(gate);
        start(manager, "cancel-me", training, testKit);
        for (long index = 0; index < 3; index++) {
            assertEquals(index, training.started.poll(10, TimeUnit.SECONDS));
        }
        TestProbe<StatusReply<Optional<JobStatus>>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.CancelJob("cancel-me", reply.getRef()));
        assertTrue(reply.receiveMessage(WAIT).getValue().isPresent());
        gate.release(100);

        JobStatus status = awaitTerminal(manager, "cancel-me");
        assertEquals(JobState.CANCELLED, status.state());
        assertEquals(2, status.step(), "the step in progress completes, no later one starts");
        assertEquals(4, training.consumed.get());
        assertEquals(List.of(1L, 2L), training.checkpoints, "checkpoints of completed steps stay");
        assertNull(status.error());
    }

    @Test
    void resumeContinuesFromTheRestoredStepWithTheMatchingMicroBatch() {
        var manager = manager(SETTINGS);
        var events = subscribe(manager);
        var training = new ScriptedTraining(6, 3, 100).restoringStep(4);
        start(manager, "resumed", training, testKit);
        StepEvent first = (StepEvent) events.receiveMessage(WAIT).event();
        assertEquals(5, first.step());
        assertEquals(ScriptedTraining.expectedStepLoss(5, 3), first.loss(), 1e-15);
        assertEquals(List.of(12L), training.firstIndexLoaded, "step 5 starts at micro-batch 4·3");
        assertEquals(JobState.SUCCEEDED, awaitTerminal(manager, "resumed").state());
    }

    @Test
    void stopAllCheckpointsRunningJobsThenRefusesNewOnes() throws Exception {
        var manager = manager(SETTINGS);
        Semaphore gate = new Semaphore(0);
        var training = new ScriptedTraining(10, 1, 100).gated(gate);
        start(manager, "running", training, testKit);
        assertEquals(0L, training.started.poll(10, TimeUnit.SECONDS));

        TestProbe<Done> done = testKit.createTestProbe();
        manager.tell(new JobManager.StopAll(done.getRef()));
        list(manager); // StopAll processed before the model may finish its step
        gate.release(100);
        done.receiveMessage(WAIT);

        JobStatus status = job(manager, "running").status();
        assertEquals(JobState.STOPPED, status.state());
        assertEquals(1, status.step());
        assertEquals(List.of(1L), training.checkpoints, "a checkpoint of the last completed step");

        TestProbe<StatusReply<JobStatus>> refused = testKit.createTestProbe();
        manager.tell(new JobManager.StartJob("late", new ScriptedTraining(1, 1, 1), refused.getRef()));
        assertTrue(refused.receiveMessage(WAIT).isError());
    }

    @Test
    void startRefusesRunningDuplicatesAndBadIdsButResumesAStoppedJob() {
        var manager = manager(SETTINGS);
        TestProbe<StatusReply<JobStatus>> reply = testKit.createTestProbe();
        manager.tell(new JobManager.StartJob("../x", new ScriptedTraining(1, 1, 1), reply.getRef()));
        assertTrue(reply.receiveMessage(WAIT).getError().getMessage().contains("job id must match"));

        Semaphore gate = new Semaphore(0);
        start(manager, "twice", new ScriptedTraining(3, 1, 1).gated(gate), testKit);
        manager.tell(new JobManager.StartJob("twice", new ScriptedTraining(3, 1, 1), reply.getRef()));
        assertTrue(reply.receiveMessage(WAIT).getError().getMessage().contains("still running"));

        TestProbe<StatusReply<Optional<JobStatus>>> cancelled = testKit.createTestProbe();
        manager.tell(new JobManager.CancelJob("twice", cancelled.getRef()));
        cancelled.receiveMessage(WAIT);
        gate.release(100);
        assertEquals(JobState.CANCELLED, awaitTerminal(manager, "twice").state());

        var rerun = new ScriptedTraining(3, 1, 1).restoringStep(1);
        start(manager, "twice", rerun, testKit);
        JobStatus status = awaitTerminal(manager, "twice");
        assertEquals(JobState.SUCCEEDED, status.state());
        assertEquals(2, job(manager, "twice").events().size(), "a new run keeps a new history: steps 2 and 3");
        assertEquals(2, job(manager, "twice").events().get(0).step());
    }

    @Test
    void anEvaluationArrivingMidStepWaitsForTheOptimizerStep() throws Exception {
        var manager = manager(SETTINGS);
        Semaphore gate = new Semaphore(0);
        var training = new ScriptedTraining(3, 2, 100).gated(gate);
        TestProbe<StatusReply<BatchLoss>> reply = testKit.createTestProbe();
        try {
            start(manager, "mid-step", training, testKit);
            assertEquals(0L, training.started.poll(10, TimeUnit.SECONDS));
            // The model is inside step 1's forward/backward passes, held at micro-batch 0.
            manager.tell(new JobManager.Evaluate("mid-step", new MicroBatch(1, 1,
                    new int[] {1}, new int[] {2}, new float[] {1}, new int[] {0}, new int[] {1}, null, null),
                    reply.getRef()));
            list(manager);
            reply.expectNoMessage(Duration.ofMillis(200));
        } finally {
            gate.release(100);
        }
        assertTrue(reply.receiveMessage(WAIT).isSuccess());
        // A snapshot: the job trains on while we look, and a sub-list view of the live list would fail.
        assertEquals(List.of("forward 0", "forward 1", "optimizer 1", "evaluate"),
                List.copyOf(training.calls).subList(0, 4));
    }

    @Test
    void anEvaluationWaitingForAStepThatNeverFinishesIsAnsweredWhenTheJobFails() {
        // The pull timeout fails the job; it leaves the evaluation below seconds to arrive before that.
        var settings = new PipelineSettings(1, Duration.ofSeconds(4), Duration.ofSeconds(30), Duration.ofSeconds(30));
        var manager = manager(settings);
        var training = new ScriptedTraining(4, 1, 100).hangingLoaderAt(2);
        TestProbe<StatusReply<BatchLoss>> reply = testKit.createTestProbe();
        try {
            start(manager, "stuck", training, testKit);
            // Step 2 is done, so step 3 was requested before anything the manager forwards next: the
            // evaluation waits behind step 3, whose micro-batch never comes.
            testKit.createTestProbe().awaitAssert(WAIT, () -> {
                assertEquals(2, job(manager, "stuck").status().step());
                return null;
            });
            manager.tell(new JobManager.Evaluate("stuck", new MicroBatch(1, 1,
                    new int[] {1}, new int[] {2}, new float[] {1}, new int[] {0}, new int[] {1}, null, null),
                    reply.getRef()));
            StatusReply<BatchLoss> answer = reply.receiveMessage(WAIT);
            assertTrue(answer.isError());
            assertTrue(answer.getError().getMessage().contains("the job stopped before its current step finished"),
                    answer.getError().getMessage());
            assertEquals(EvaluationRefused.Reason.NOT_RUNNING, ((EvaluationRefused) answer.getError()).reason(),
                    "the job's state, not the batch, is at fault");
            assertEquals(JobState.FAILED, awaitTerminal(manager, "stuck").state());
        } finally {
            training.releaseHang.countDown();
        }
    }

    @Test
    void evaluationsBeyondTheWaitingLimitAreRefusedAsBusyAndTheOthersAnsweredAfterTheStep() {
        var manager = manager(SETTINGS);
        var training = new ScriptedTraining(3, 1, 100).hangingLoaderAt(1);
        TestProbe<StatusReply<BatchLoss>> reply = testKit.createTestProbe();
        var batch = new MicroBatch(1, 1, new int[] {1}, new int[] {2}, new float[] {1}, new int[] {0},
                new int[] {1}, null, null);
        try {
            start(manager, "crowded", training, testKit);
            // Step 1 is done, so step 2 (whose micro-batch hangs) was requested before any evaluation below.
            testKit.createTestProbe().awaitAssert(WAIT, () -> {
                assertEquals(1, job(manager, "crowded").status().step());
                return null;
            });
            for (int i = 0; i <= Model.MAX_WAITING_EVALUATIONS; i++) {
                manager.tell(new JobManager.Evaluate("crowded", batch, reply.getRef()));
            }
            Throwable refused = reply.receiveMessage(WAIT).getError();
            assertEquals(EvaluationRefused.Reason.BUSY, ((EvaluationRefused) refused).reason(), refused.getMessage());
            assertEquals(Model.MAX_WAITING_EVALUATIONS, job(manager, "crowded").gauges().waitingEvaluations());
            reply.expectNoMessage(Duration.ofMillis(100));
        } finally {
            training.releaseHang.countDown();
        }
        // After the step the waiting ones run on the evaluation budget (the steps' compute time, next to nothing
        // here); those the job's last steps left no budget for are answered when it ends, none is left unanswered.
        int answered = 0;
        for (int i = 0; i < Model.MAX_WAITING_EVALUATIONS; i++) {
            StatusReply<BatchLoss> answer = reply.receiveMessage(WAIT);
            if (answer.isSuccess()) {
                answered++;
                assertTrue(answer.getValue().weightsStep() >= 2, "scored after step 2: " + answer.getValue());
            } else {
                assertEquals(EvaluationRefused.Reason.NOT_RUNNING, ((EvaluationRefused) answer.getError()).reason());
            }
        }
        assertTrue(answered >= 1, "the first waiting evaluation runs right after the step");
        awaitTerminal(manager, "crowded");
        assertEquals(0, job(manager, "crowded").gauges().waitingEvaluations());
    }

    @Test
    void evaluateUsesTheRunningJobsComputeAndRefusesUnknownJobs() {
        var manager = manager(SETTINGS);
        Semaphore gate = new Semaphore(0);
        var training = new ScriptedTraining(3, 1, 100).gated(gate);
        start(manager, "eval", training, testKit);
        TestProbe<StatusReply<BatchLoss>> reply = testKit.createTestProbe();
        var batch = new MicroBatch(1, 2, new int[] {1, 2}, new int[] {2, 3},
                new float[] {1, 1}, new int[] {0, 1}, new int[] {1, 1}, null, null);

        manager.tell(new JobManager.Evaluate("nope", batch, reply.getRef()));
        Throwable unknown = reply.receiveMessage(WAIT).getError();
        assertTrue(unknown.getMessage().contains("no job nope"), unknown.getMessage());
        assertEquals(EvaluationRefused.Reason.UNKNOWN_JOB, ((EvaluationRefused) unknown).reason());

        // Evaluate is served between micro-batches; let the job's steps through so the model is free.
        gate.release(100);
        manager.tell(new JobManager.Evaluate("eval", batch, reply.getRef()));
        StatusReply<BatchLoss> answer = reply.receiveMessage(WAIT);
        if (answer.isSuccess()) {
            assertEquals(2.0, answer.getValue().total().mean());
        } else {
            assertTrue(answer.getError().getMessage().contains("not running"), answer.getError().getMessage());
        }
        assertFalse(training.computeThreads.size() > 1, "evaluate runs on the compute thread");
    }
}
