package io.kdapack.core.linalg;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The large float arrays of a training step (activations, their gradients, the layers' temporaries), lent for the
 * step and taken back when it ends, so that the next step reuses them instead of allocating them again.
 *
 * <p>Why: a step of the 23.7 M-parameter benchmark model allocates about 2.4 GB of arrays of 4–12 MiB. The JVM
 * zeroes each new array on the thread that allocates it, at 5–12 GB/s on fresh memory, while the other workers wait:
 * 9–12 % of the two-thread step had one thread in such a stretch. A reused array is zeroed by every worker at once,
 * and an array the caller overwrites whole ({@link #floats}) is not zeroed at all.
 *
 * <p>Confinement: a workspace lends only on the thread that opened it ({@link #open}), for the extent of the
 * returned scope; anywhere else, and for arrays under {@value #MIN_LENGTH} floats, the methods allocate as
 * {@code new float[n]} does. Everything lent in a scope must be unreachable once the scope closes: the step's results
 * never come from here. Arrays dead before then go back early ({@link #release}, {@link #releaseLent}: the model gives
 * back each layer's activations and temporaries once its backward has run), so that a step holds no more than it would
 * allocate live at once. What a workspace keeps between steps is what the last step borrowed and, as long as they fit,
 * the arrays of earlier steps: at most {@link #limitBytes} (beyond it a step allocates as usual).
 */
public final class Workspace {
    /** Shorter arrays come from the thread's allocation buffer, cheaply. */
    static final int MIN_LENGTH = 1 << 16;
    /** Floats zeroed per parallel task. */
    private static final int ZERO_BLOCK = 1 << 16;
    private static final ThreadLocal<Workspace> OPEN = new ThreadLocal<>();
    private static final Workspace SHARED = new Workspace(Runtime.getRuntime().maxMemory() / 8);

    private final long limitBytes;
    private final Map<Integer, ArrayDeque<float[]>> free = new HashMap<>();
    /** Lent in this scope and not given back, by identity, each with its place in {@link #order}. */
    private final Map<float[], Integer> lent = new IdentityHashMap<>();
    /** Every lending of this scope, in order: an array given back and lent again appears again. */
    private final List<float[]> order = new ArrayList<>();
    /** Every array lent in this scope, by identity: what the workspace keeps for the next. */
    private final Map<float[], Boolean> used = new IdentityHashMap<>();
    private long usedBytes;
    private final AtomicBoolean inUse = new AtomicBoolean();

    /**
     * The workspace the models of this JVM share, keeping at most an eighth of the maximum heap: one step at a time
     * lends from it (a step running at the same time as another allocates as usual).
     */
    public static Workspace shared() {
        return SHARED;
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
            // Kept: every array this scope borrowed, then those of earlier scopes it did not need, while they fit in
            // the limit (a step of another shape, or an unrelated call between two steps, does not empty it).
            List<float[]> earlier = new ArrayList<>();
            for (ArrayDeque<float[]> same : free.values()) {
                for (float[] array : same) {
                    if (!used.containsKey(array)) {
                        earlier.add(array);
                    }
                }
            }
            free.clear();
            long keptBytes = usedBytes;
            for (float[] array : earlier) {
                if (keptBytes + 4L * array.length <= limitBytes) {
                    keptBytes += 4L * array.length;
                    giveBack(array);
                }
            }
            for (float[] array : used.keySet()) { // last, so lent first
                giveBack(array);
            }
            used.clear();
            lent.clear();
            order.clear();
            usedBytes = 0;
            inUse.set(false);
        }
    }

    /** Whether this thread has a scope open that lends ({@link #open}). */
    public static boolean lends() {
        return OPEN.get() != null;
    }

    /** A zeroed {@code float[n]}: a reused one zeroed by the workers, a new one as the JVM zeroes it. */
    public static float[] zeros(int n) {
        return take(n, true);
    }

    /**
     * A {@code float[n]} whose contents are unspecified (zeros when newly allocated): for an array the caller writes
     * whole before reading it, such as the C of a product with {@code beta = 0}.
     */
    public static float[] floats(int n) {
        return take(n, false);
    }

    private static float[] take(int n, boolean zeroed) {
        Workspace workspace = OPEN.get();
        if (workspace == null || n < MIN_LENGTH) {
            return new float[n];
        }
        return workspace.lend(n, zeroed);
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
                workspace.giveBack(array);
            }
        }
    }

    /**
     * A point in this thread's lendings, for {@link #releaseLent}: what was lent so far (0 outside a scope). A layer's
     * forward and backward are each a run of lendings between two marks.
     */
    public static int mark() {
        Workspace workspace = OPEN.get();
        return workspace == null ? 0 : workspace.order.size();
    }

    /**
     * Gives back every array lent between marks {@code from} and {@code to} and not given back since, except those in
     * {@code keep}: a layer's activations and temporaries once its backward has run, all but the gradient it returns.
     * An array lent there, given back and lent again after {@code to} is left alone.
     */
    public static void releaseLent(int from, int to, float[]... keep) {
        Workspace workspace = OPEN.get();
        if (workspace == null) {
            return;
        }
        for (int i = from; i < to; i++) {
            float[] array = workspace.order.get(i);
            Integer at = workspace.lent.get(array);
            if (at != null && at == i && !contains(keep, array)) {
                workspace.lent.remove(array);
                workspace.giveBack(array);
            }
        }
    }

    private static boolean contains(float[][] arrays, float[] array) {
        for (float[] a : arrays) {
            if (a == array) {
                return true;
            }
        }
        return false;
    }

    private void giveBack(float[] array) {
        free.computeIfAbsent(array.length, n -> new ArrayDeque<>()).push(array);
    }

    /**
     * A {@code float[n]} of this workspace: a free one (zeroed by the workers if {@code zeroed}) or a new one, or past
     * the limit a new one not lent.
     */
    private float[] lend(int n, boolean zeroed) {
        ArrayDeque<float[]> same = free.get(n);
        float[] array = same == null ? null : same.peek();
        boolean counted = array != null && used.containsKey(array); // given back earlier in this scope
        if (!counted && usedBytes + 4L * n > limitBytes) {
            return new float[n];
        }
        if (array == null) {
            array = new float[n];
        } else {
            same.poll();
            if (zeroed) {
                zero(array);
            }
        }
        if (!counted) {
            used.put(array, Boolean.TRUE);
            usedBytes += 4L * n;
        }
        lent.put(array, order.size());
        order.add(array);
        return array;
    }

    private static void zero(float[] array) {
        int n = array.length;
        Team.forEach((n + ZERO_BLOCK - 1) / ZERO_BLOCK,
                b -> Arrays.fill(array, b * ZERO_BLOCK, Math.min(n, (b + 1) * ZERO_BLOCK), 0f));
    }
}
