package io.kdapack.actors.events;

import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The event history of one job run: every {@link StepEvent} in step order, then the {@link EndEvent}.
 *
 * <p>Retention: a run keeps all its steps (consecutive, so step {@code s} lives at index
 * {@code s − firstStep}), which bounds the history by the job's step count: about 100 bytes a step, 10 MB for
 * 100,000 steps. Readers therefore never miss a step, however late they come or slow they read; a stream
 * that falls behind simply reads on from here instead of being buffered per subscriber. The job manager
 * drops the history of old finished jobs.
 *
 * <p>Threads: one writer (the metrics hub), any number of readers on any thread. Listeners run on the
 * writer's thread after each change and must only schedule work elsewhere.
 */
public final class JobEventLog {

    private final long capacity;
    private volatile StepEvent[] events = new StepEvent[16];
    private volatile int size;
    private volatile long firstStep = -1;
    private volatile EndEvent end;
    /** The last step that carries a validation loss, or null. */
    private volatile StepEvent lastValidation;
    private final CopyOnWriteArrayList<Runnable> listeners = new CopyOnWriteArrayList<>();

    /** @param capacity most steps this run can produce (its plan's total steps) */
    public JobEventLog(long capacity) {
        if (capacity < 1 || capacity > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("capacity must be in [1, 2^31 - 9], got " + capacity);
        }
        this.capacity = capacity;
    }

    /** Appends the next step; steps must be consecutive and the log not ended. */
    public void append(StepEvent event) {
        if (end != null) {
            throw new IllegalStateException("event log has ended; cannot append step " + event.step());
        }
        if (size > 0 && event.step() != firstStep + size) {
            throw new IllegalArgumentException("step " + event.step() + " does not follow step " + (firstStep + size - 1));
        }
        if (size == capacity) {
            throw new IllegalStateException("event log is full (" + capacity + " steps)");
        }
        if (size == 0) {
            firstStep = event.step();
        }
        StepEvent[] array = events;
        if (size == array.length) {
            array = Arrays.copyOf(array, (int) Math.min(capacity, 2L * array.length));
            events = array; // published before size, so a reader that sees the new size sees this array
        }
        array[size] = event;
        if (event.valLoss() != null) {
            lastValidation = event;
        }
        size = size + 1;
        notifyListeners();
    }

    /** Ends the log; no step follows. */
    public void end(EndEvent event) {
        if (end != null) {
            throw new IllegalStateException("event log has already ended");
        }
        end = event;
        notifyListeners();
    }

    /** Steps recorded so far. */
    public int size() {
        return size;
    }

    /** The {@code index}-th step recorded, {@code 0 <= index < size()}. */
    public StepEvent get(int index) {
        int n = size;
        if (index < 0 || index >= n) {
            throw new IndexOutOfBoundsException("index " + index + " outside [0, " + n + ")");
        }
        return events[index];
    }

    /** The index of the first step after {@code lastSeenStep} (0 if before the first step; may equal size()). */
    public int indexAfter(long lastSeenStep) {
        long first = firstStep;
        if (first < 0) {
            return 0;
        }
        long index = lastSeenStep - first + 1;
        return (int) Math.max(0, Math.min(index, size));
    }

    /** The last step recorded with a validation loss ({@link StepEvent#valLoss()}), if any. */
    public Optional<StepEvent> lastValidation() {
        return Optional.ofNullable(lastValidation);
    }

    /** The end event, once the run is over. */
    public Optional<EndEvent> end() {
        return Optional.ofNullable(end);
    }

    /** Registers a change listener; run the returned handle to remove it. */
    public Runnable subscribe(Runnable listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    private void notifyListeners() {
        for (Runnable listener : listeners) {
            listener.run();
        }
    }
}
