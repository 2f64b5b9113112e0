package io.kdapack.core.kda;

import io.kdapack.core.linalg.BufferPool;
import io.kdapack.core.linalg.Team;
import io.kdapack.core.linalg.Workspace;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;

/**
 * The frame shared by the CPU backends: validation, preprocessing, one task per (run of documents, group of value
 * heads) run in parallel ({@link #headsPerTask}), and the reductions after it. A subclass supplies the per-head
 * kernel and how documents are grouped into runs ({@link #runs}: one per document by default).
 *
 * <p>Layout: the preprocessing writes head-major tensors ({@link KdaPreprocess.Prepared}, row {@code vh·T + p}),
 * so a task's rows of q, k, decay and beta are contiguous; or, where the subclass can ({@link #preparesRows}), its
 * kernels prepare each chunk's rows from the raw, token-major inputs themselves ({@link KdaPreprocess.Rows}) and map
 * their gradients back to the raw inputs there, so that neither the prepared tensors nor their gradients make a pass
 * over memory of their own (bitwise the same results). The values, the outputs, the upstream gradient {@code dO}
 * and the gradient {@code dv} stay in the token-major layout of the contract ({@code [T,HV,V]}, a row stride of
 * {@code HV·V}: {@link HeadSequence#valueOffset}): the kernels read and write them a chunk's rows at a time, through
 * per-thread scratch where a row is used more than once, so none gets a pass over memory of its own (the backward
 * once copied {@code dO} and {@code dv} to and from head-major buffers per call instead, which was 2 % slower on one
 * thread: docs/kda.md).
 *
 * <p>Determinism: every task reads its own rows and writes disjoint outputs (per value head, even for
 * {@code dq}/{@code dk} under grouped value attention). The sums over value heads of one q/k head and over
 * tokens ({@code dA_log}, {@code dt_bias}) run after the parallel part in a fixed order, so results are
 * bitwise the same for every thread count.
 *
 * <p>A training forward ({@link #forwardForBackward}) keeps the prepared tensors (when the call has them) and what the
 * subclass returns for each head ({@code H}), so that the backward need not run the forward again.
 *
 * @param <H> what one head's forward keeps for its backward
 */
public abstract class HeadParallelBackend<H> implements KdaBackend {

    /** How much of a head's forward to keep for the backward. */
    public enum Keep {
        /** Nothing: a forward without backward. */
        NOTHING,
        /** The states the backward restarts from. */
        STATES,
        /** The states and every intermediate the backward reads. */
        INTERMEDIATES
    }

    private final int threads;
    private final ForkJoinPool pool;
    /** The per-call head-major temporaries and prepared tensors, reused from call to call. */
    private final BufferPool buffers = new BufferPool();

    /** The buffers lent from call to call, whatever they hold; what a subclass borrows it gives back here too. */
    BufferPool buffers() {
        return buffers;
    }

    /** @param threads worker threads, ≥ 1 */
    HeadParallelBackend(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        this.threads = threads;
        this.pool = threads == 1 ? null : new ForkJoinPool(threads);
    }

    /** Worker threads used. */
    public int threads() {
        return threads;
    }

    /**
     * One head of a task: the tokens of a run of consecutive documents {@code firstDoc … endDoc−1} (contiguous, no
     * padding between them; zero-length documents among them own no token) for value head {@code head}, rows
     * {@code row0 … row0+length−1} of the head-major tensors of the call, which every task shares and reads only
     * there. Document {@code n}'s rows are {@code head·T + segments.start(n) …}; its states in the
     * {@code [N,HV,K,V]} arrays start at {@link #stateOffset}. Head-major row {@code r} is token
     * {@code r − head·T}, whose row of a token-major {@code [T,HV,V]} tensor (v, the outputs) starts at
     * {@link #valueOffset}{@code (r)}, the next row {@link #valueStride} floats further.
     *
     * @param tokens T, the tokens of the call
     * @param q      {@code [HV·T,K]} prepared (normalised, scaled) queries, or null when {@code rows} prepares them
     * @param k      {@code [HV·T,K]} prepared keys, or null likewise
     * @param v      {@code [T,HV,V]} values, token-major as given
     * @param g      {@code [HV·T,K]} log-space decay, or null likewise
     * @param beta   {@code [HV·T]} beta in (0,1), or null likewise
     * @param rows   where the backend prepares rows itself ({@link #preparesRows}): the preprocessing of a chunk's
     *               rows from the raw inputs, which the kernel calls for each chunk it computes; otherwise null
     */
    record HeadSequence(Segments segments, int firstDoc, int endDoc, int head, int valueHeads, int tokens, int row0,
                        int length, int keyDim, int valueDim, float[] q, float[] k, float[] v, float[] g,
                        float[] beta, KdaPreprocess.Rows rows) {

        /** The token of head-major row {@code row} of this head. */
        int token(int row) {
            return row - head * tokens;
        }

        /** Offset of document {@code n}'s state of this head in a {@code [N,HV,K,V]} array. */
        int stateOffset(int n) {
            return (n * valueHeads + head) * keyDim * valueDim;
        }

        /** Offset in a token-major {@code [T,HV,V]} tensor of the row of head-major row {@code row} (this head). */
        int valueOffset(int row) {
            return ((row - head * tokens) * valueHeads + head) * valueDim;
        }

        /** Floats between the rows of consecutive tokens of one head in a {@code [T,HV,V]} tensor: {@code HV·V}. */
        int valueStride() {
            return valueHeads * valueDim;
        }
    }

    /**
     * Gradients shared by all tasks: {@code dv [T,HV,V]} token-major; {@code dq}, {@code dk}, {@code dg}, {@code dBeta}
     * those of the prepared tensors, head-major like {@link HeadSequence}'s q, k, g, beta, or, where
     * {@link HeadSequence#rows} prepares the rows, those of the raw inputs, token-major like them, with each row's term
     * of {@code A_log}'s gradient in {@code aLogRows [T,HV]} (null otherwise, and without {@code A_log}).
     */
    record HeadGradients(float[] dq, float[] dk, float[] dv, float[] dg, float[] dBeta, double[] aLogRows) {
    }

    /**
     * Runs one task forward: the value heads {@code group}, consecutive heads of one run of documents (the same
     * tokens), each of them over every token of the run.
     *
     * @param h0   {@code [N,HV,K,V]} initial states, or null for zero
     * @param ht   {@code [N,HV,K,V]} final states to write for this task's documents (the slices of its heads), or
     *             null when they are not wanted
     * @param o    {@code [T,HV,V]} outputs, this task's rows to write
     * @param keep what to keep for {@link #backwardHeads}
     * @return what was kept for each head, in the order of {@code group} (null entries for {@link Keep#NOTHING}, or
     *         when the subclass keeps nothing)
     */
    abstract List<H> forwardHeads(List<HeadSequence> group, float[] h0, float[] ht, float[] o, Keep keep);

    /**
     * Runs one task backward: the value heads {@code group}, as {@link #forwardHeads} took them.
     *
     * @param h0    {@code [N,HV,K,V]} initial states, or null for zero (not changed)
     * @param kept  what {@link #forwardHeads} kept for each head
     * @param dO    {@code [T,HV,V]} upstream gradient of the outputs, token-major as given
     * @param dHt   {@code [N,HV,K,V]} upstream gradient of the final states, or null for zero
     * @param dH0   {@code [N,HV,K,V]} gradients of the initial states to write for this task's documents, or null
     *              when there are no initial states
     * @param grads gradients to write in this task's rows (they hold stale values on entry)
     */
    abstract void backwardHeads(List<HeadSequence> group, float[] h0, List<H> kept, float[] dO, float[] dHt,
                                float[] dH0, HeadGradients grads);

    /**
     * The runs of documents this backend gives one task each: {@code runs[i] … runs[i+1]−1} (document indices,
     * ascending, {@code runs[0] = 0} and the last entry N), each a stretch of contiguous tokens. By default one run
     * per document.
     */
    int[] runs(Segments segments) {
        int[] runs = new int[segments.count() + 1];
        for (int n = 0; n <= segments.count(); n++) {
            runs[n] = n;
        }
        return runs;
    }

    /**
     * Whether the kernels of this backend prepare each chunk's rows themselves from the raw inputs
     * ({@link HeadSequence#rows}) for {@code in}, rather than read head-major tensors prepared once per call; false
     * unless a subclass can. The results are bitwise the same either way.
     */
    boolean preparesRows(KdaInputs in) {
        return false;
    }

    /**
     * Whether {@link #forwardHeads} writes (not adds to) every element of its tokens' rows of the outputs and of its
     * documents' final states, and {@link #backwardHeads} every element of its tokens' rows of {@code dv}, of its
     * documents' initial-state gradients and, where the kernels prepare rows ({@link #preparesRows}), of its tokens'
     * rows of the raw gradients of q, k and g: then only what no task covers needs zeros, the padding tokens' rows
     * and the zero-length documents' states ({@link #results}); false unless a subclass does.
     */
    boolean writesWholeResults() {
        return false;
    }

    /** What a training forward of {@code in} keeps; {@link Keep#STATES} unless a subclass knows better. */
    public Keep keepForBackward(KdaInputs in) {
        return Keep.STATES;
    }

    @Override
    public KdaResult forward(KdaInputs in, KdaOptions options) {
        return forward(in, options, true);
    }

    @Override
    public KdaResult forward(KdaInputs in, KdaOptions options, boolean finalStates) {
        return record(in, options, Keep.NOTHING, finalStates).result();
    }

    @Override
    public KdaTape forwardForBackward(KdaInputs in, KdaOptions options) {
        return forwardForBackward(in, options, true);
    }

    @Override
    public KdaTape forwardForBackward(KdaInputs in, KdaOptions options, boolean finalStates) {
        return record(in, options, keepForBackward(in), finalStates);
    }

    @Override
    public KdaGradients backward(KdaInputs in, KdaOptions options, float[] dO, float[] dHt) {
        in.validate(options);
        in.validateUpstream(dO, dHt);
        return backward(forwardForBackward(in, options, false), dO, dHt);
    }

    @Override
    public KdaGradients backward(KdaTape tape, float[] dO, float[] dHt) {
        if (!(tape instanceof Tape recorded) || recorded.owner != this) {
            return backward(tape.inputs(), tape.options(), dO, dHt);
        }
        if (!recorded.used.compareAndSet(false, true)) {
            throw new IllegalStateException("tape: a backward already ran through this KDA forward; "
                    + "run the forward again for another backward");
        }
        KdaInputs in = recorded.inputs();
        in.validateUpstream(dO, dHt);
        int rows = in.tokens() * in.valueHeads();
        int keyRows = in.tokens() * in.heads();
        KdaPreprocess.Prepared p = recorded.prepared;
        // dv is the result itself, token-major (padding rows zero), written by the tasks a chunk's rows at a time.
        // Prepared per call, the kernels write the prepared tensors' gradients, head-major, for the preprocessing's
        // backward; prepared per chunk, they write the raw gradients themselves, which are results (padding zero).
        HeadGradients grads;
        if (p != null) {
            grads = new HeadGradients(buffers.take(rows * in.keyDim()), buffers.take(rows * in.keyDim()),
                    results(in, Covered.TOKEN_ROWS, rows * in.valueDim())[0], buffers.take(rows * in.keyDim()),
                    buffers.take(rows), null);
        } else {
            float[][] raw = results(in, Covered.TOKEN_ROWS, keyRows * in.keyDim(), keyRows * in.keyDim(),
                    rows * in.valueDim(), rows * in.keyDim());
            grads = new HeadGradients(raw[0], raw[1], raw[2], raw[3], new float[rows],
                    in.aLog() != null ? new double[rows] : null);
        }
        float[] dH0 = in.h0() == null ? null
                : results(in, Covered.DOCUMENT_STATES, Math.toIntExact(in.stateSize()))[0];
        int[] runs = recorded.runs;
        runTasks(in, runs, (first, group) -> {
            List<H> kept = new ArrayList<>(group);
            for (int i = 0; i < group; i++) {
                kept.add(kept(recorded, first + i));
            }
            backwardHeads(sequences(in, p, recorded.rows, runs, first, group), in.h0(), kept, dO, dHt, dH0, grads);
            Arrays.fill(recorded.heads, first, first + group, null);
        });
        if (dH0 != null && dHt != null) {
            copyEmptyDocumentStates(in, dHt, dH0); // a zero-length sequence's final state is its initial state
        }
        KdaPreprocess.RawGradients raw;
        if (p != null) {
            raw = KdaPreprocess.backward(in, recorded.options(), p, grads.dq(), grads.dk(), grads.dg(), grads.dBeta(),
                    this::runBlocks);
            buffers.give(grads.dq(), grads.dk(), grads.dg(), grads.dBeta(), p.q(), p.k(), p.decay(), p.beta());
        } else {
            raw = KdaPreprocess.withParameterGradients(in, recorded.options(), grads.dq(), grads.dk(), grads.dg(),
                    grads.dBeta(), grads.aLogRows(), this::runBlocks);
        }
        return new KdaGradients(raw.dq(), raw.dk(), grads.dv(), raw.dg(), raw.dBeta(), raw.dALog(), raw.dDtBias(), dH0);
    }

    /**
     * Runs the forward of every task, keeping {@code keep} of each (nothing kept for {@link Keep#NOTHING}), with the
     * final states when {@code finalStates}.
     */
    private Tape record(KdaInputs in, KdaOptions options, Keep keep, boolean finalStates) {
        in.validate(options);
        KdaPreprocess.Rows rows = preparesRows(in) ? new KdaPreprocess.Rows(in, options) : null;
        KdaPreprocess.Prepared p = rows != null ? null
                : KdaPreprocess.forward(in, options, this::runBlocks, buffers::take);
        // The outputs are the result itself: token-major, padding rows zero.
        float[] o = results(in, Covered.TOKEN_ROWS, in.tokens() * in.valueHeads() * in.valueDim())[0];
        float[] ht = finalStates ? results(in, Covered.DOCUMENT_STATES, Math.toIntExact(in.stateSize()))[0] : null;
        int[] runs = runs(in.segments());
        Object[] heads = keep == Keep.NOTHING ? null : new Object[(runs.length - 1) * in.valueHeads()];
        runTasks(in, runs, (first, group) -> {
            List<H> kept = forwardHeads(sequences(in, p, rows, runs, first, group), in.h0(), ht, o, keep);
            if (heads != null) {
                for (int i = 0; i < group; i++) {
                    heads[first + i] = kept.get(i);
                }
            }
        });
        if (ht != null && in.h0() != null) {
            copyEmptyDocumentStates(in, in.h0(), ht);
        }
        KdaResult result = new KdaResult(o, ht);
        if (keep == Keep.NOTHING) {
            if (p != null) {
                buffers.give(p.q(), p.k(), p.decay(), p.beta());
            }
            return new Tape(this, in, options, result, null, null, runs, null);
        }
        return new Tape(this, in, options, result, p, rows, runs, heads);
    }

    /** {@code to[n] = from[n]} ({@code [N,HV,K,V]}) for every zero-length sequence n, which no task covers. */
    private static void copyEmptyDocumentStates(KdaInputs in, float[] from, float[] to) {
        int size = in.valueHeads() * in.keyDim() * in.valueDim();
        Segments seg = in.segments();
        for (int n = 0; n < seg.count(); n++) {
            if (seg.length(n) == 0) {
                System.arraycopy(from, n * size, to, n * size, size);
            }
        }
    }

    /** A forward recorded by this backend: the prepared tensors (or the rows' preparation) and what each head kept. */
    private static final class Tape implements KdaTape {
        private final HeadParallelBackend<?> owner;
        private final KdaInputs inputs;
        private final KdaOptions options;
        private final KdaResult result;
        /** The tensors prepared for the call, or null where {@link #rows} prepares each chunk's rows. */
        private final KdaPreprocess.Prepared prepared;
        private final KdaPreprocess.Rows rows;
        /** The runs of documents of the tasks ({@link #runs(Segments)}). */
        private final int[] runs;
        /** What each task {@code run·HV + hv} kept; cleared as the backward consumes it. */
        private final Object[] heads;
        private final AtomicBoolean used = new AtomicBoolean();

        Tape(HeadParallelBackend<?> owner, KdaInputs inputs, KdaOptions options, KdaResult result,
             KdaPreprocess.Prepared prepared, KdaPreprocess.Rows rows, int[] runs, Object[] heads) {
            this.owner = owner;
            this.inputs = inputs;
            this.options = options;
            this.result = result;
            this.prepared = prepared;
            this.rows = rows;
            this.runs = runs;
            this.heads = heads;
        }

        @Override
        public KdaInputs inputs() {
            return inputs;
        }

        @Override
        public KdaOptions options() {
            return options;
        }

        @Override
        public KdaResult result() {
            return result;
        }
    }

    /** What this backend's {@link #forwardHeads} kept for {@code task} of a tape it recorded. */
    @SuppressWarnings("unchecked") // the tape's owner is this backend, whose forwardHeads returns H's
    private H kept(Tape tape, int task) {
        return (H) tape.heads[task];
    }

    /**
     * Value heads a task takes together ({@link #forwardHeads}), given the {@code runs} of documents of a call: the
     * most that divide HV and still leave at least two tasks a worker, or one. Token-major, the rows of neighbouring
     * heads are neighbours in memory ({@code HV·K} floats from a token to the next): a task that walks its heads chunk
     * by chunk reads and writes its tokens' rows together, where one head at a time met them a quarter at a time (at 64
     * documents, four heads a task on one thread and two on two: the training call 6.5 % and 5.4 % faster, in turns;
     * docs/kda.md). Whatever the group, each head's arithmetic is the same, so the results do not depend on it.
     */
    private int headsPerTask(int hv, int runs) {
        for (int group = hv; group > 1; group--) {
            if (hv % group == 0 && (long) runs * (hv / group) >= 2L * threads) {
                return group;
            }
        }
        return 1;
    }

    /** One task: value heads {@code first … first+heads−1} of the call (each {@code run·HV + hv}) of one run. */
    @FunctionalInterface
    private interface Task {
        void run(int first, int heads);
    }

    /**
     * Runs {@code task} for every (run, group of {@link #headsPerTask} value heads), longest runs first, skipping runs
     * of no token.
     */
    private void runTasks(KdaInputs in, int[] runs, Task task) {
        int hv = in.valueHeads();
        Segments seg = in.segments();
        int count = runs.length - 1;
        int[] length = new int[count];
        int nonEmpty = 0;
        for (int r = 0; r < count; r++) {
            length[r] = runTokens(seg, runs, r);
            nonEmpty += length[r] > 0 ? 1 : 0;
        }
        Integer[] sorted = new Integer[nonEmpty];
        for (int r = 0, i = 0; r < count; r++) {
            if (length[r] > 0) {
                sorted[i++] = r;
            }
        }
        Arrays.sort(sorted, (a, b) -> Integer.compare(length[b], length[a]));
        int group = headsPerTask(hv, nonEmpty);
        int groups = hv / group;
        int[] order = new int[nonEmpty * groups];
        for (int i = 0; i < nonEmpty; i++) {
            for (int g = 0; g < groups; g++) {
                order[i * groups + g] = sorted[i] * hv + g * group;
            }
        }
        runBlocks(order.length, i -> task.run(order[i], group));
    }

    /** Tokens of run {@code r}: from its first non-empty document's start to its last one's end (0 if none). */
    static int runTokens(Segments seg, int[] runs, int r) {
        int first = firstNonEmpty(seg, runs, r);
        if (first == runs[r + 1]) {
            return 0;
        }
        int last = runs[r + 1] - 1;
        while (seg.length(last) == 0) {
            last--;
        }
        return seg.end(last) - seg.start(first);
    }

    private static int firstNonEmpty(Segments seg, int[] runs, int r) {
        int n = runs[r];
        while (n < runs[r + 1] && seg.length(n) == 0) {
            n++;
        }
        return n;
    }

    /** Tasks {@code first … first+count−1} (value heads of one run) as {@link #sequence}s. */
    private static List<HeadSequence> sequences(KdaInputs in, KdaPreprocess.Prepared p, KdaPreprocess.Rows rows,
                                                int[] runs, int first, int count) {
        List<HeadSequence> group = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            group.add(sequence(in, p, rows, runs, first + i));
        }
        return group;
    }

    /** Task {@code run·HV + hv} in the prepared tensors {@code p}, or with {@code rows} when p is null. */
    private static HeadSequence sequence(KdaInputs in, KdaPreprocess.Prepared p, KdaPreprocess.Rows rows, int[] runs,
                                         int task) {
        int hv = in.valueHeads();
        int run = task / hv;
        int vh = task % hv;
        Segments seg = in.segments();
        int first = firstNonEmpty(seg, runs, run);
        int row0 = vh * in.tokens() + seg.start(first);
        int length = runTokens(seg, runs, run);
        if (p == null) {
            return new HeadSequence(seg, first, runs[run + 1], vh, hv, in.tokens(), row0, length, in.keyDim(),
                    in.valueDim(), null, null, in.v(), null, null, rows);
        }
        return new HeadSequence(seg, first, runs[run + 1], vh, hv, in.tokens(), row0, length, in.keyDim(),
                in.valueDim(), p.q(), p.k(), in.v(), p.decay(), p.beta(), null);
    }

    /** How a result's elements fall to the tasks: what {@link #writesWholeResults} covers. */
    private enum Covered {
        /** {@code [T, …]} token-major: a row per token, written by the task of its segment; padding rows by none. */
        TOKEN_ROWS,
        /** {@code [N, …]}: a state per document, written by the tasks of its tokens; a zero-length one's by none. */
        DOCUMENT_STATES
    }

    /**
     * Arrays of the given lengths for a call's results, laid out as {@code covered} says, zero except where the tasks
     * will write them whole ({@link #writesWholeResults}: then only what no task covers is zeroed, else everything).
     * Inside a training step ({@link Workspace#lends}) they come from the step's workspace: {@link Workspace#zeros}
     * where they must be zero whole, else {@link Workspace#floats} with the uncovered parts zeroed here. Fresh arrays
     * for the results (20 MiB at T 4096, 4 heads) cost 15 % of the call, in turns, and zeroing the reused ones whole
     * another 2–3 % (docs/kda.md).
     * Elsewhere they are new, allocated on the workers at once: the JVM zeroes an array on the thread that allocates
     * it, and a call's results of several MiB zeroed one after another on the calling thread leave the other workers
     * idle.
     */
    private float[][] results(KdaInputs in, Covered covered, int... lengths) {
        float[][] arrays = new float[lengths.length][];
        if (!Workspace.lends()) {
            runBlocks(lengths.length, i -> arrays[i] = new float[lengths[i]]);
            return arrays;
        }
        boolean whole = writesWholeResults();
        for (int i = 0; i < lengths.length; i++) {
            arrays[i] = whole ? Workspace.floats(lengths[i]) : Workspace.zeros(lengths[i]);
        }
        if (!whole) {
            return arrays;
        }
        Segments seg = in.segments();
        for (float[] array : arrays) {
            if (covered == Covered.TOKEN_ROWS) {
                int width = seg.tokens() == 0 ? 0 : array.length / seg.tokens();
                int from = 0; // the first token after the previous segment
                for (int n = 0; n < seg.count(); n++) {
                    Arrays.fill(array, from * width, seg.start(n) * width, 0f);
                    from = seg.end(n);
                }
                Arrays.fill(array, from * width, array.length, 0f);
            } else {
                int size = seg.count() == 0 ? 0 : array.length / seg.count();
                for (int n = 0; n < seg.count(); n++) {
                    if (seg.length(n) == 0) {
                        Arrays.fill(array, n * size, (n + 1) * size, 0f);
                    }
                }
            }
        }
        return arrays;
    }

    /**
     * Runs {@code block.accept(b)} for {@code b = 0 … count−1} on the workers (independent blocks): those of the
     * calling fork-join task's pool where there is one (a layer's call inside a training step: one pool, whose workers
     * linger between the step's loops, {@link Team}), else this backend's. Each worker takes the next block in order
     * until none is left, so blocks listed longest first are spread evenly. Results do not depend on which pool ran
     * them.
     */
    private void runBlocks(int count, IntConsumer block) {
        if (pool == null || count <= 1) {
            KdaPreprocess.SERIAL.run(count, block);
            return;
        }
        ForkJoinPool callers = ForkJoinTask.getPool();
        (callers != null ? Team.of(callers) : Team.of(pool)).runInOrder(count, block);
    }
}
