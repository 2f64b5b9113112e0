package io.kdapack.core.linalg;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The large float arrays of a training step (activations, their gradients, the layers' temporaries), lent for the
 * step and taken back when it ends, so that the next step reuses them instead of allocating them again.
 *
 * <p>Why: a step of the 23.7 M-parameter benchmark model allocates about 2.4 GB of arrays of 4–12 MiB. The JVM zeroes
 * each new array on the thread that allocates it, at 5–12 GB/s on fresh memory, while the other workers wait: 9–12 %
 * of the two-thread step had one thread in such a stretch. A reused array is zeroed by every worker at once, and an
 * array the caller overwrites whole ({@link #floats}) is not zeroed at all.
 *
 * <p>Confinement: a workspace lends only on the thread that opened it ({@link #open}), for the extent of the
 * returned scope; anywhere else, and for arrays under {@value #MIN_LENGTH} floats, the methods allocate as
 * {@code new float[n]} does. Everything lent in a scope must be unreachable once the scope closes: the step's results
 * never come from here. What a workspace keeps between steps is what the last step borrowed, at most
 * {@link #limitBytes} (beyond it the step allocates as usual).
 */
public final class Workspace {
    /** Shorter arrays come from the thread's allocation buffer, cheaply. */
    static final int MIN_LENGTH = 1 << 16;
    /** Floats zeroed per parallel task. */
    private static final int ZERO_BLOCK = 1 << 16;
    private static final ThreadLocal<Workspace> OPEN = new ThreadLocal<>();

    private final long limitBytes;
    private final Map<Integer, ArrayDeque<float[]>> free = new HashMap<>();
    /** Lent in this scope and not given back, by identity. */
    private final Map<float[], Boolean> lent = new IdentityHashMap<>();
    /** Every array lent in this scope, by identity: what the workspace keeps for the next. */
    private final Map<float[], Boolean> used = new IdentityHashMap<>();
    private long usedBytes;
    private final AtomicBoolean inUse = new AtomicBoolean();

    /** A workspace keeping at most a quarter of the JVM's maximum heap. */
    public Workspace() {
        this(Runtime.getRuntime().maxMemory() / 4);
    }

    /** @param limitBytes the most this workspace lends in one scope and keeps between scopes, ≥ 0 */
    public Workspace(long limitBytes) {
        if (limitBytes < 0) {
            throw new IllegalArgumentException("limitBytes must be >= 0, got " + limitBytes);
        }
        this.limitBytes = limitBytes;
    }

    /**
     * Opens a scope on the calling thread: until it closes, {@link #zeros}, {@link #floats} and {@link #release} on
     * this thread use this workspace. Where this thread already has a scope open, or this workspace is open on another
     * thread (two steps of one model at once), the scope lends nothing: its arrays are allocated as usual.
     */
    public Scope open() {
        if (OPEN.get() != null || !inUse.compareAndSet(false, true)) {
            return new Scope(false);
        }
        OPEN.set(this);
        return new Scope(true);
    }

    /** The scope of {@link #open}: closing it takes back every array lent in it. */
    public final class Scope implements AutoCloseable {
        private final boolean lends;

        private Scope(boolean lends) {
            this.lends = lends;
        }

        @Override
        public void close() {
            if (!lends) {
                return;
            }
            OPEN.remove();
            free.clear();
            for (float[] array : used.keySet()) {
                free.computeIfAbsent(array.length, n -> new ArrayDeque<>()).push(array);
            }
            used.clear();
            lent.clear();
            usedBytes = 0;
            inUse.set(false);
        }
    }

    /** A zeroed {@code float[n]}. */
    public static float[] zeros(int n) {
        float[] array = floats(n);
        if (OPEN.get() != null && n >= MIN_LENGTH) {
            Team.forEach((n + ZERO_BLOCK - 1) / ZERO_BLOCK,
                    b -> Arrays.fill(array, b * ZERO_BLOCK, Math.min(n, (b + 1) * ZERO_BLOCK), 0f));
        }
        return array;
    }

    /**
     * A {@code float[n]} whose contents are unspecified (zeros when newly allocated): for an array the caller writes
     * whole before reading it, such as the C of a product with {@code beta = 0}.
     */
    public static float[] floats(int n) {
        Workspace workspace = OPEN.get();
        if (workspace == null || n < MIN_LENGTH) {
            return new float[n];
        }
        return workspace.lend(n);
    }

    /**
     * Gives arrays back before the scope ends, for reuse later in it; the caller must not touch them again. Arrays
     * this thread's workspace did not lend (or null) are ignored.
     */
    public static void release(float[]... arrays) {
        Workspace workspace = OPEN.get();
        if (workspace == null) {
            return;
        }
        for (float[] array : arrays) {
            if (array != null && workspace.lent.remove(array) != null) {
                workspace.free.computeIfAbsent(array.length, n -> new ArrayDeque<>()).push(array);
            }
        }
    }

    private float[] lend(int n) {
        ArrayDeque<float[]> same = free.get(n);
        float[] array = same == null ? null : same.peek();
        if (array != null && used.containsKey(array)) { // given back earlier in this scope: already counted
            same.poll();
        } else if (usedBytes + 4L * n > limitBytes) {
            return new float[n];
        } else {
            if (array != null) {
                same.poll();
            } else {
                array = new float[n];
            }
            used.put(array, Boolean.TRUE);
            usedBytes += 4L * n;
        }
        lent.put(array, Boolean.TRUE);
        return array;
    }
}
