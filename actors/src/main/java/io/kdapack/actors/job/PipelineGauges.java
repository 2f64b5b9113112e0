package io.kdapack.actors.job;

import java.util.concurrent.atomic.AtomicInteger;

/** Live queue depths of one job's pipeline and model, readable from any thread (for {@code /metrics}). */
public final class PipelineGauges {

    private final AtomicInteger readyBatches = new AtomicInteger();
    private final AtomicInteger loadsInFlight = new AtomicInteger();
    private final AtomicInteger waitingEvaluations = new AtomicInteger();

    /** Segmented micro-batches waiting for the model. */
    public int readyBatches() {
        return readyBatches.get();
    }

    /** Micro-batches requested from the loader and not yet segmented. */
    public int loadsInFlight() {
        return loadsInFlight.get();
    }

    /** {@code POST /v1/steps} evaluations waiting at the model for the step in progress to finish. */
    public int waitingEvaluations() {
        return waitingEvaluations.get();
    }

    void setWaitingEvaluations(int waiting) {
        waitingEvaluations.set(waiting);
    }

    void set(int ready, int inFlight) {
        readyBatches.set(ready);
        loadsInFlight.set(inFlight);
    }
}
