package io.kdapack.actors.inference;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** The inference actor's occupancy, written by the actor after every message and read by metrics at any time. */
public final class InferenceGauges {
    private final AtomicInteger activeSequences = new AtomicInteger();
    private final AtomicInteger queuedRequests = new AtomicInteger();
    private final AtomicLong reservedStateBytes = new AtomicLong();
    private final AtomicLong stateBytes = new AtomicLong();
    private final AtomicInteger loadedModels = new AtomicInteger();
    private final AtomicLong liveWeightBytes = new AtomicLong();

    /** Sequences holding a slot (generating or prefilling). */
    public int activeSequences() {
        return activeSequences.get();
    }

    /** Requests waiting for slots or state memory. */
    public int queuedRequests() {
        return queuedRequests.get();
    }

    /** State memory reserved by running requests, each at its longest. */
    public long reservedStateBytes() {
        return reservedStateBytes.get();
    }

    /** State memory the running sequences hold now. */
    public long stateBytes() {
        return stateBytes.get();
    }

    public int loadedModels() {
        return loadedModels.get();
    }

    /** Bytes of the running jobs' weight copies cached for serving their live weights. */
    public long liveWeightBytes() {
        return liveWeightBytes.get();
    }

    /** Written by whoever caches live-weight engines (the server's inference service). */
    public void setLiveWeightBytes(long bytes) {
        liveWeightBytes.set(bytes);
    }

    void set(int active, int queued, long reserved, long held, int models) {
        activeSequences.set(active);
        queuedRequests.set(queued);
        reservedStateBytes.set(reserved);
        stateBytes.set(held);
        loadedModels.set(models);
    }
}
