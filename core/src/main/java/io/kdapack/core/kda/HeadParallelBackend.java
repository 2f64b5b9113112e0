package io.kdapack.core.kda;

import io.kdapack.core.linalg.BufferPool;
import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * The frame shared by the CPU backends: validation, preprocessing, one task per (sequence, value head) run
 * in parallel, and the reductions after it. A subclass supplies only the per-head kernel.
 *
 * <p>Layout: the preprocessing writes head-major tensors ({@link KdaPreprocess.Prepared}, row {@code vh·T + p}),
 * so a task's rows are contiguous and the kernels work on them in place; outputs and gradients are written
 * head-major too, and brought back to the token-major layout of the contract once per call.
 *
 * <p>Determinism: every task reads its own rows and writes disjoint outputs (per value head, even for
 * {@code dq}/{@code dk} under grouped value attention). The sums over value heads of one q/k head and over
 * tokens ({@code dA_log}, {@code dt_bias}) run after the parallel part in a fixed order, so results are
 * bitwise the same for every thread count.
 *
 * <p>A training forward ({@link #forwardForBackward}) keeps the prepared tensors and what the subclass
 * returns for each head ({@code H}), so that the backward need not run the forward again.
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
     * One (sequence, value head) problem over {@code L} tokens: rows {@code row0 … row0+L−1} of the
     * head-major tensors of the call, which every task shares and reads only there.
     *
     * @param q    {@code [HV·T,K]} prepared (normalised, scaled) queries
     * @param k    {@code [HV·T,K]} prepared keys
     * @param v    {@code [HV·T,V]} values
     * @param g    {@code [HV·T,K]} log-space decay
     * @param beta {@code [HV·T]} beta in (0,1)
     */
    record HeadSequence(int row0, int length, int keyDim, int valueDim, float[] q, float[] k, float[] v, float[] g,
                        float[] beta) {
    }

    /** Gradients, head-major like {@link HeadSequence}'s tensors and shared by all tasks. */
    record HeadGradients(float[] dq, float[] dk, float[] dv, float[] dg, float[] dBeta) {
    }

    /**
     * Runs one head forward.
     *
     * @param state {@code [K,V]} the initial state on entry, the final state on return
     * @param o     {@code [HV·T,V]} outputs, this sequence's rows to write (they hold stale values on entry)
     * @param keep  what to keep for {@link #backwardHead}
     * @return what was kept (null for {@link Keep#NOTHING}, or when the subclass keeps nothing)
     */
    abstract H forwardHead(HeadSequence s, float[] state, float[] o, Keep keep);

    /**
     * Runs one head backward.
     *
     * @param h0     {@code [K,V]} initial state (not changed)
     * @param kept   what {@link #forwardHead} kept for this head
     * @param dO     {@code [HV·T,V]} upstream gradient of the outputs
     * @param dState {@code [K,V]} the gradient of the final state on entry, of the initial state on return
     * @param grads  gradients to write in this sequence's rows (they hold stale values on entry)
     */
    abstract void backwardHead(HeadSequence s, float[] h0, H kept, float[] dO, float[] dState, HeadGradients grads);

    /** What a training forward of {@code in} keeps; {@link Keep#STATES} unless a subclass knows better. */
    public Keep keepForBackward(KdaInputs in) {
        return Keep.STATES;
    }

    @Override
    public KdaResult forward(KdaInputs in, KdaOptions options) {
        return record(in, options, Keep.NOTHING).result();
    }

    @Override
    public KdaTape forwardForBackward(KdaInputs in, KdaOptions options) {
        return record(in, options, keepForBackward(in));
    }

    @Override
    public KdaGradients backward(KdaInputs in, KdaOptions options, float[] dO, float[] dHt) {
        in.validate(options);
        in.validateUpstream(dO, dHt);
        return backward(forwardForBackward(in, options), dO, dHt);
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
        int hv = in.valueHeads();
        int stateSize = in.keyDim() * in.valueDim();
        float[] dOHeads = headMajor(in, dO, in.valueDim());
        int rows = in.tokens() * hv;
        HeadGradients grads = new HeadGradients(buffers.take(rows * in.keyDim()), buffers.take(rows * in.keyDim()),
                buffers.take(rows * in.valueDim()), buffers.take(rows * in.keyDim()), buffers.take(rows));
        float[] dH0 = in.h0() == null ? null : new float[Math.toIntExact(in.stateSize())];
        runTasks(in, task -> {
            int n = task / hv;
            int vh = task % hv;
            float[] dState = dHt == null ? new float[stateSize]
                    : Arrays.copyOfRange(dHt, task * stateSize, (task + 1) * stateSize);
            backwardHead(sequence(in, recorded.prepared, n, vh), initialState(in, n, vh), kept(recorded, task),
                    dOHeads, dState, grads);
            recorded.heads[task] = null;
            if (dH0 != null) {
                System.arraycopy(dState, 0, dH0, task * stateSize, stateSize);
            }
        });
        KdaPreprocess.RawGradients raw = KdaPreprocess.backward(in, recorded.options(), recorded.prepared,
                grads.dq(), grads.dk(), grads.dg(), grads.dBeta(), this::runBlocks);
        float[] dv = tokenMajor(in, grads.dv(), in.valueDim());
        KdaPreprocess.Prepared p = recorded.prepared;
        buffers.give(dOHeads, grads.dq(), grads.dk(), grads.dv(), grads.dg(), grads.dBeta(), p.q(), p.k(), p.v(),
                p.decay(), p.beta());
        return new KdaGradients(raw.dq(), raw.dk(), dv, raw.dg(), raw.dBeta(), raw.dALog(), raw.dDtBias(), dH0);
    }

    /** Runs the forward of every head, keeping {@code keep} of each (nothing kept for {@link Keep#NOTHING}). */
    private Tape record(KdaInputs in, KdaOptions options, Keep keep) {
        in.validate(options);
        KdaPreprocess.Prepared p = KdaPreprocess.forward(in, options, this::runBlocks, buffers::take);
        int hv = in.valueHeads();
        int vd = in.valueDim();
        int stateSize = in.keyDim() * vd;
        float[] oHeads = buffers.take(in.tokens() * hv * vd);
        float[] ht = new float[Math.toIntExact(in.stateSize())];
        Object[] heads = keep == Keep.NOTHING ? null : new Object[in.segments().count() * hv];
        runTasks(in, task -> {
            int n = task / hv;
            int vh = task % hv;
            float[] state = initialState(in, n, vh);
            H kept = forwardHead(sequence(in, p, n, vh), state, oHeads, keep);
            if (heads != null) {
                heads[task] = kept;
            }
            System.arraycopy(state, 0, ht, task * stateSize, stateSize);
        });
        KdaResult result = new KdaResult(tokenMajor(in, oHeads, vd), ht);
        buffers.give(oHeads);
        if (keep == Keep.NOTHING) {
            buffers.give(p.q(), p.k(), p.v(), p.decay(), p.beta());
            return new Tape(this, in, options, result, null, null);
        }
        return new Tape(this, in, options, result, p, heads);
    }

    /** A forward recorded by this backend: the prepared tensors and what each head kept. */
    private static final class Tape implements KdaTape {
        private final HeadParallelBackend<?> owner;
        private final KdaInputs inputs;
        private final KdaOptions options;
        private final KdaResult result;
        private final KdaPreprocess.Prepared prepared;
        /** What each task {@code n·HV + hv} kept; cleared as the backward consumes it. */
        private final Object[] heads;
        private final AtomicBoolean used = new AtomicBoolean();

        Tape(HeadParallelBackend<?> owner, KdaInputs inputs, KdaOptions options, KdaResult result,
             KdaPreprocess.Prepared prepared, Object[] heads) {
            this.owner = owner;
            this.inputs = inputs;
            this.options = options;
            this.result = result;
            this.prepared = prepared;
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

    /** What this backend's {@link #forwardHead} kept for {@code task} of a tape it recorded. */
    @SuppressWarnings("unchecked") // the tape's owner is this backend, whose forwardHead returns an H
    private H kept(Tape tape, int task) {
        return (H) tape.heads[task];
    }

    /** Runs {@code task(n·HV + hv)} for every (sequence, value head), longest sequences first. */
    private void runTasks(KdaInputs in, IntConsumer task) {
        int hv = in.valueHeads();
        Segments seg = in.segments();
        Integer[] sequences = new Integer[seg.count()];
        for (int n = 0; n < sequences.length; n++) {
            sequences[n] = n;
        }
        Arrays.sort(sequences, (a, b) -> Integer.compare(seg.length(b), seg.length(a)));
        int[] order = new int[sequences.length * hv];
        for (int i = 0; i < sequences.length; i++) {
            for (int vh = 0; vh < hv; vh++) {
                order[i * hv + vh] = sequences[i] * hv + vh;
            }
        }
        runBlocks(order.length, i -> task.accept(order[i]));
    }

    /** Sequence {@code n} of value head {@code vh} in the prepared tensors. */
    private static HeadSequence sequence(KdaInputs in, KdaPreprocess.Prepared p, int n, int vh) {
        Segments seg = in.segments();
        return new HeadSequence(vh * in.tokens() + seg.start(n), seg.length(n), in.keyDim(), in.valueDim(),
                p.q(), p.k(), p.v(), p.decay(), p.beta());
    }

    private static float[] initialState(KdaInputs in, int n, int vh) {
        int size = in.keyDim() * in.valueDim();
        if (in.h0() == null) {
            return new float[size];
        }
        int offset = (n * in.valueHeads() + vh) * size;
        return Arrays.copyOfRange(in.h0(), offset, offset + size);
    }

    /** The segment rows of {@code x [T,HV,dim]} as {@code [HV,T,dim]} in a pooled buffer (padding rows unwritten). */
    private float[] headMajor(KdaInputs in, float[] x, int dim) {
        float[] out = buffers.take(x.length);
        copySegmentRows(in, (p, h, tokens, heads) -> System.arraycopy(x, (p * heads + h) * dim, out,
                (h * tokens + p) * dim, dim));
        return out;
    }

    /** The segment rows of {@code x [HV,T,dim]} as {@code [T,HV,dim]} (padding rows zero). */
    private float[] tokenMajor(KdaInputs in, float[] x, int dim) {
        float[] out = new float[x.length];
        copySegmentRows(in, (p, h, tokens, heads) -> System.arraycopy(x, (h * tokens + p) * dim, out,
                (p * heads + h) * dim, dim));
        return out;
    }

    /** Copies one row: token {@code p} of value head {@code h}. */
    @FunctionalInterface
    private interface RowCopy {
        void copy(int p, int h, int tokens, int heads);
    }

    /** Runs {@code copy} for every segment token of every value head, one block per value head. */
    private void copySegmentRows(KdaInputs in, RowCopy copy) {
        Segments seg = in.segments();
        int tokens = in.tokens();
        int heads = in.valueHeads();
        runBlocks(heads, h -> {
            for (int n = 0; n < seg.count(); n++) {
                for (int p = seg.start(n); p < seg.end(n); p++) {
                    copy.copy(p, h, tokens, heads);
                }
            }
        });
    }

    /**
     * Runs {@code block.accept(b)} for {@code b = 0 … count−1} on the workers (independent blocks). Each worker
     * takes the next block in order until none is left, so blocks listed longest first are spread evenly.
     */
    private void runBlocks(int count, IntConsumer block) {
        if (pool == null || count <= 1) {
            KdaPreprocess.SERIAL.run(count, block);
            return;
        }
        AtomicInteger next = new AtomicInteger();
        Runnable worker = () -> {
            for (int b = next.getAndIncrement(); b < count; b = next.getAndIncrement()) {
                block.accept(b);
            }
        };
        ForkJoinTask<?>[] workers = new ForkJoinTask<?>[Math.min(threads, count)];
        for (int w = 0; w < workers.length; w++) {
            workers[w] = pool.submit(worker);
        }
        for (ForkJoinTask<?> w : workers) {
            w.join();
        }
    }
}
