package io.kdapack.core.kda;

import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * The frame shared by the CPU backends: validation, preprocessing, one task per (sequence, value head) run
 * in parallel, and the reductions after it. A subclass supplies only the per-head kernel.
 *
 * <p>Determinism: every task reads its own slices and writes disjoint outputs (per value head, even for
 * {@code dq}/{@code dk} under grouped value attention). The sums over value heads of one q/k head and over
 * tokens ({@code dA_log}, {@code dt_bias}) run after the parallel part in a fixed order, so results are
 * bitwise the same for every thread count.
 *
 * <p>A training forward ({@link #forwardForBackward}) keeps each head's gathered rows and what the subclass
 * returns for it ({@code H}), so that the backward gathers nothing and need not run the forward again.
 *
 * @param <H> what one head's forward keeps for its backward
 */
abstract class HeadParallelBackend<H> implements KdaBackend {

    /** How much of a head's forward to keep for the backward. */
    enum Keep {
        /** Nothing: a forward without backward. */
        NOTHING,
        /** The states the backward restarts from. */
        STATES,
        /** The states and every intermediate the backward reads. */
        INTERMEDIATES
    }

    private final int threads;
    private final ForkJoinPool pool;

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
     * One (sequence, value head) problem over {@code L} tokens, contiguous.
     *
     * @param q    {@code [L,K]} prepared (normalised, scaled) queries
     * @param k    {@code [L,K]} prepared keys
     * @param v    {@code [L,V]} values
     * @param g    {@code [L,K]} log-space decay
     * @param beta {@code [L]} beta in (0,1)
     */
    record HeadSequence(int length, int keyDim, int valueDim, float[] q, float[] k, float[] v, float[] g,
                        float[] beta) {
    }

    /** Gradients of one head problem, shaped like {@link HeadSequence}'s arrays; start at zero. */
    record HeadGradients(float[] dq, float[] dk, float[] dv, float[] dg, float[] dBeta) {
        static HeadGradients zeros(int length, int keyDim, int valueDim) {
            return new HeadGradients(new float[length * keyDim], new float[length * keyDim],
                    new float[length * valueDim], new float[length * keyDim], new float[length]);
        }
    }

    /**
     * Runs one head forward.
     *
     * @param state {@code [K,V]} the initial state on entry, the final state on return
     * @param o     {@code [L,V]} outputs to fill
     * @param keep  what to keep for {@link #backwardHead}
     * @return what was kept (null for {@link Keep#NOTHING}, or when the subclass keeps nothing)
     */
    abstract H forwardHead(HeadSequence s, float[] state, float[] o, Keep keep);

    /**
     * Runs one head backward.
     *
     * @param h0     {@code [K,V]} initial state (not changed)
     * @param kept   what {@link #forwardHead} kept for this head
     * @param dO     {@code [L,V]} upstream gradient of the outputs
     * @param dState {@code [K,V]} the gradient of the final state on entry, of the initial state on return
     * @param grads  gradients to fill (zero on entry)
     */
    abstract void backwardHead(HeadSequence s, float[] h0, H kept, float[] dO, float[] dState, HeadGradients grads);

    /** What a training forward of {@code in} keeps; {@link Keep#STATES} unless a subclass knows better. */
    Keep keepForBackward(KdaInputs in) {
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
        KdaOptions options = recorded.options();
        in.validateUpstream(dO, dHt);
        int t = in.tokens();
        int hv = in.valueHeads();
        int kd = in.keyDim();
        int vd = in.valueDim();
        int stateSize = kd * vd;
        float[] dqPerValueHead = new float[t * hv * kd];
        float[] dkPerValueHead = new float[t * hv * kd];
        float[] dDecay = new float[t * hv * kd];
        float[] dv = new float[t * hv * vd];
        float[] dBeta = new float[t * hv];
        float[] dH0 = in.h0() == null ? null : new float[Math.toIntExact(in.stateSize())];
        Segments seg = in.segments();
        runTasks(in, task -> {
            int n = task / hv;
            int vh = task % hv;
            HeadSequence s = recorded.sequences[task];
            recorded.sequences[task] = null;
            int start = seg.start(n);
            float[] dOut = gatherRows(dO, start, s.length(), hv, vh, vd);
            float[] dState = dHt == null ? new float[stateSize]
                    : Arrays.copyOfRange(dHt, (n * hv + vh) * stateSize, (n * hv + vh + 1) * stateSize);
            HeadGradients grads = HeadGradients.zeros(s.length(), kd, vd);
            backwardHead(s, initialState(in, n, vh), kept(recorded, task), dOut, dState, grads);
            recorded.heads[task] = null;
            scatterRows(grads.dq(), dqPerValueHead, start, s.length(), hv, vh, kd);
            scatterRows(grads.dk(), dkPerValueHead, start, s.length(), hv, vh, kd);
            scatterRows(grads.dv(), dv, start, s.length(), hv, vh, vd);
            scatterRows(grads.dg(), dDecay, start, s.length(), hv, vh, kd);
            scatterRows(grads.dBeta(), dBeta, start, s.length(), hv, vh, 1);
            if (dH0 != null) {
                System.arraycopy(dState, 0, dH0, (n * hv + vh) * stateSize, stateSize);
            }
        });
        float[] dq = sumValueHeadGroups(dqPerValueHead, t, in.heads(), hv, kd);
        float[] dk = sumValueHeadGroups(dkPerValueHead, t, in.heads(), hv, kd);
        KdaPreprocess.RawGradients raw = KdaPreprocess.backward(in, options, recorded.prepared, dq, dk, dDecay, dBeta);
        return new KdaGradients(raw.dq(), raw.dk(), dv, raw.dg(), raw.dBeta(), raw.dALog(), raw.dDtBias(), dH0);
    }

    /** Runs the forward of every head, keeping {@code keep} of each (nothing kept for {@link Keep#NOTHING}). */
    private Tape record(KdaInputs in, KdaOptions options, Keep keep) {
        in.validate(options);
        KdaPreprocess.Prepared p = KdaPreprocess.forward(in, options);
        int hv = in.valueHeads();
        int vd = in.valueDim();
        int stateSize = in.keyDim() * vd;
        float[] o = new float[in.tokens() * hv * vd];
        float[] ht = new float[Math.toIntExact(in.stateSize())];
        Segments seg = in.segments();
        int tasks = seg.count() * hv;
        HeadSequence[] sequences = keep == Keep.NOTHING ? null : new HeadSequence[tasks];
        Object[] heads = keep == Keep.NOTHING ? null : new Object[tasks];
        runTasks(in, task -> {
            int n = task / hv;
            int vh = task % hv;
            HeadSequence s = gather(in, p, n, vh);
            float[] state = initialState(in, n, vh);
            float[] out = new float[s.length() * vd];
            H kept = forwardHead(s, state, out, keep);
            if (sequences != null) {
                sequences[task] = s;
                heads[task] = kept;
            }
            scatterRows(out, o, seg.start(n), s.length(), hv, vh, vd);
            System.arraycopy(state, 0, ht, (n * hv + vh) * stateSize, stateSize);
        });
        return new Tape(this, in, options, new KdaResult(o, ht), p, sequences, heads);
    }

    /** A forward recorded by this backend: the prepared inputs, each head's rows and what it kept. */
    private static final class Tape implements KdaTape {
        private final HeadParallelBackend<?> owner;
        private final KdaInputs inputs;
        private final KdaOptions options;
        private final KdaResult result;
        private final KdaPreprocess.Prepared prepared;
        /** Per task {@code n·HV + hv}; cleared as the backward consumes them. */
        private final HeadSequence[] sequences;
        private final Object[] heads;
        private final AtomicBoolean used = new AtomicBoolean();

        Tape(HeadParallelBackend<?> owner, KdaInputs inputs, KdaOptions options, KdaResult result, KdaPreprocess.Prepared prepared,
             HeadSequence[] sequences, Object[] heads) {
            this.owner = owner;
            this.inputs = inputs;
            this.options = options;
            this.result = result;
            this.prepared = prepared;
            this.sequences = sequences;
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
        if (pool == null || order.length <= 1) {
            for (int id : order) {
                task.accept(id);
            }
            return;
        }
        pool.submit(() -> IntStream.range(0, order.length).parallel().forEach(i -> task.accept(order[i]))).join();
    }

    private static HeadSequence gather(KdaInputs in, KdaPreprocess.Prepared p, int n, int vh) {
        Segments seg = in.segments();
        int start = seg.start(n);
        int len = seg.length(n);
        int hv = in.valueHeads();
        int h = in.heads();
        int head = vh / (hv / h);
        int kd = in.keyDim();
        return new HeadSequence(len, kd, in.valueDim(),
                gatherRows(p.q(), start, len, h, head, kd),
                gatherRows(p.k(), start, len, h, head, kd),
                gatherRows(in.v(), start, len, hv, vh, in.valueDim()),
                gatherRows(p.decay(), start, len, hv, vh, kd),
                gatherRows(p.beta(), start, len, hv, vh, 1));
    }

    private static float[] initialState(KdaInputs in, int n, int vh) {
        int size = in.keyDim() * in.valueDim();
        if (in.h0() == null) {
            return new float[size];
        }
        int offset = (n * in.valueHeads() + vh) * size;
        return Arrays.copyOfRange(in.h0(), offset, offset + size);
    }

    /** Rows {@code start … start+len−1} of head {@code head} of {@code src [T,heads,dim]} as {@code [len,dim]}. */
    private static float[] gatherRows(float[] src, int start, int len, int heads, int head, int dim) {
        float[] out = new float[len * dim];
        for (int r = 0; r < len; r++) {
            System.arraycopy(src, ((start + r) * heads + head) * dim, out, r * dim, dim);
        }
        return out;
    }

    private static void scatterRows(float[] rows, float[] dst, int start, int len, int heads, int head, int dim) {
        for (int r = 0; r < len; r++) {
            System.arraycopy(rows, r * dim, dst, ((start + r) * heads + head) * dim, dim);
        }
    }

    /** {@code [T,HV,K]} → {@code [T,H,K]}: the value heads of each q/k head summed in ascending order. */
    private static float[] sumValueHeadGroups(float[] perValueHead, int tokens, int heads, int valueHeads, int dim) {
        if (heads == valueHeads) {
            return perValueHead;
        }
        int group = valueHeads / heads;
        float[] out = new float[tokens * heads * dim];
        for (int p = 0; p < tokens; p++) {
            for (int vh = 0; vh < valueHeads; vh++) {
                int src = (p * valueHeads + vh) * dim;
                int dst = (p * heads + vh / group) * dim;
                for (int i = 0; i < dim; i++) {
                    out[dst + i] += perValueHead[src + i];
                }
            }
        }
        return out;
    }
}
