package io.kdapack.actors.job;

import java.util.concurrent.atomic.AtomicInteger;

/** Live queue depths of one job's pipeline, readable from any thread (for {@code /metrics}). */
public final class PipelineGauges {

    private final AtomicInteger readyBatches = new AtomicInteger();
    private final AtomicInteger loadsInFlight = new AtomicInteger();

    /** Segmented micro-batches waiting for the model. */
    public int readyBatches() {
        return readyBatches.get();
    }

    /** Micro-batches requested from the loader and not yet segmented. */
    public int loadsInFlight() {
        return loadsInFlight.get();
    }

    void set(int ready, int inFlight) {
        readyBatches.set(ready);
        loadsInFlight.set(inFlight);
    }
}
