package io.kdapack.bench;

import io.kdapack.bench.InterleavedTiming;
import io.kdapack.bench.MatmulProbe;
import io.kdapack.core.kda.HeadParallelBackend;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaChunk;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.core.kda.KdaPreprocess;
import io.kdapack.core.kda.KdaRecurrent;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import io.kdapack.core.linalg.Workspace;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.nn.KimiDeltaAttention;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;

/**
 * Throughput of the KDA op on the CPU ({@code kdapack bench kda}): the chunked backend on a packed batch of
 * random-length documents (forward, and forward with backward), the same tokens as one document, the recurrent
 * reference, a fixed matrix product as the machine's ceiling ({@link MatmulProbe}), and the packed call with the
 * preprocessing run once per call into head-major tensors ({@link KdaChunked#preparedPerCall()}, bitwise the same
 * results; the form every call had before the chunks prepared their own rows, and still has under grouped value
 * heads), each timed as the median of several runs after warm-up runs, all six taking turns run by run so that their
 * ratios see the same machine.
 *
 * <p>Every call runs in a workspace scope and as a task of a pool of the benchmark's threads, as inside a training
 * step ({@link Workspace}: the call's results are lent by the step and reused by the next call; {@link #inPool}).
 * Two cases: by default the training case, as the model calls the op (no initial states, no final states asked for,
 * no upstream gradient of them); with {@code states} (the inference prefill case, and the op's full contract) every
 * document has a random initial state, its final state is returned, and the backward takes a random upstream
 * gradient of the final states and returns the initial states' gradients.
 * The unpacked run is the same tokens as one document, in the same case (one initial and one final state).
 *
 * <p>By default the op is called plain ({@link KdaOptions#plain()}, on unit q/k rows and logsigmoid gates, like the
 * golden files); with {@code layer} it is called with the options of the default model's KDA layers
 * ({@link #LAYER_OPTIONS}: in-op l2 norm of q and k, the lower-bound gate with A_log and dt_bias, the beta
 * sigmoid) on raw inputs, so that the preprocessing is timed too. Its work is not in the flop count.
 *
 * <p>Flop count ({@link #chunkedFlops}): per chunk of {@code L} tokens and per value head, the operations the
 * chunked algorithm performs, a multiply-add counting 2, an addition or multiplication 1, an exponential 1
 * — see {@link KdaChunk}:
 * <ul>
 *   <li>prepare (forward intermediates): gate prefix/suffix sums and exps {@code 4LK}, {@code Qg, Kg, Kd}
 *       {@code 3LK}, the decayed pair products {@code Aqk}, {@code P} {@code 4·L(L+1)/2·K} (the multiply-adds
 *       only; the decay factors are not counted), {@code (I + A)⁻¹} {@code L³/3}, {@code W, U}
 *       {@code L(L+1)(K+V)}, and for a chunk entered with a state {@code V' = U − WS} {@code 2LKV};</li>
 *   <li>forward: prepare + {@code Aqk V'} {@code L(L+1)V}, with an entry state {@code Qg S} {@code 2LKV}, and with
 *       an end state to hand on (or to return) the state update {@code 2LKV + KV};</li>
 *   <li>backward from the training forward's tape: {@code dAqk}/{@code dV'} {@code 2L(L+1)V} +
 *       {@code (I + A)⁻ᵀ} products {@code L(L+1)(K+V)} and {@code dA} {@code L(L−1)(K+V)} + pairwise backward (four
 *       decayed products) {@code 8·L(L+1)/2·K} + elementwise and cumsum {@code 11LK}; with an entry state the four
 *       {@code L×K×V} products through it ({@code dO Sᵀ}, {@code dV' Sᵀ}, {@code Qgᵀ dO}, {@code Wᵀ dV'})
 *       {@code 8LKV}, with an end state's gradient the two through the state update ({@code Kd dS'},
 *       {@code V' dS'ᵀ}) {@code 4LKV}; plus prepare again when the call is too large for the tape to keep the
 *       intermediates ({@link KdaChunked#KEPT_FLOATS}).</li>
 * </ul>
 * A chunk has an entry state when it continues its document or, with {@code states}, when it starts it (the initial
 * state); an end state when its document goes on past it or, with {@code states}, when it ends it (the final state
 * and its gradient). In the training case a document's first chunk enters with the zero state and its last chunk
 * hands none on, so their state products are neither computed nor counted.
 * Only the useful (triangular) part of a triangular product counts, so the figure does not reward waste. The count is
 * that of chunks cut per document (the first design's), whatever the backend does: the useful work of the tokens and
 * their documents, the same numerator before and after the chunks moved onto the packed axis, so that
 * {@code gflops} compares speed directly; the packed-axis chunks also compute the masked pairs across documents,
 * which are not counted. (Until 2026-12-06 the count charged every chunk both state sides and eight state products
 * in the backward, where the backward has six: it overstated the training case, most at short documents.)
 */
public final class KdaBenchmark {

    /**
     * Benchmark shape; {@code lowerBound} is the lower-bound gate's bound of the layer options, or null for that of
     * the default model ({@link #LAYER_OPTIONS}).
     */
    public record Config(int tokens, int heads, int valueHeads, int keyDim, int valueDim, int docs, boolean states,
                         boolean layer, Float lowerBound, int threads, int warmUp, int repeats) {
        public Config {
            if (tokens < 1 || heads < 1 || valueHeads < 1 || keyDim < 1 || valueDim < 1 || threads < 1
                    || warmUp < 0 || repeats < 1) {
                throw new IllegalArgumentException("T, H, HV, K, V, threads, repeats must be >= 1 and warm-up >= 0");
            }
            if (docs < 1 || docs > tokens) {
                throw new IllegalArgumentException("docs must be in [1, T = " + tokens + "], got " + docs);
            }
            if (valueHeads % heads != 0) {
                throw new IllegalArgumentException("HV = " + valueHeads + " must be a multiple of H = " + heads);
            }
            if (lowerBound != null && !layer) {
                throw new IllegalArgumentException("a lower bound (" + lowerBound + ") needs the layer options");
            }
        }

        /** The options the op is called with. */
        KdaOptions options() {
            if (!layer) {
                return KdaOptions.plain();
            }
            if (lowerBound == null) {
                return LAYER_OPTIONS;
            }
            KdaConfig d = KdaConfig.defaults();
            return KimiDeltaAttention.options(new KdaConfig(d.numHeads(), d.numVHeads(), d.headDim(), d.convSize(),
                    lowerBound.doubleValue(), d.normEps()));
        }
    }

    /** The options of the default model's KDA layers. */
    static final KdaOptions LAYER_OPTIONS = KimiDeltaAttention.options(KdaConfig.defaults());

    private KdaBenchmark() {
    }

    /** Runs the benchmark; the map is the JSON object to print, in a stable key order. */
    public static Map<String, Object> run(Config c) {
        Random rnd = new Random(2026);
        Segments packed = Varlen.fromCuSeqlens(randomCuSeqlens(rnd, c.tokens(), c.docs()), c.tokens());
        Segments single = Varlen.fromCuSeqlens(new int[] {0, c.tokens()}, c.tokens());
        Problem packedProblem = Problem.draw(rnd, packed, c);
        Problem singleProblem = packedProblem.withSegments(single, c);
        KdaChunked chunked = new KdaChunked(c.threads());
        KdaRecurrent recurrent = new KdaRecurrent(c.threads());

        KdaChunked perCall = chunked.preparedPerCall();

        double[] t;
        double[] cpu;
        double matmulGflops;
        try (MatmulProbe matmul = new MatmulProbe(c.threads()); ForkJoinPool callers = new ForkJoinPool(c.threads())) {
            InterleavedTiming.Medians m = InterleavedTiming.measure(c.warmUp(), 0, c.repeats(),
                    inPool(callers, () -> packedProblem.forward(chunked)),
                    inPool(callers, () -> packedProblem.forwardBackward(chunked)),
                    inPool(callers, () -> singleProblem.forwardBackward(chunked)),
                    inPool(callers, () -> packedProblem.forwardBackward(recurrent)),
                    matmul::run, inPool(callers, () -> packedProblem.forwardBackward(perCall)));
            t = m.wallSeconds();
            cpu = m.cpuSeconds();
            matmulGflops = matmul.flops() / t[4] * 1e-9;
        }
        boolean recomputed = chunked.keepForBackward(packedProblem.inputs()) != HeadParallelBackend.Keep.INTERMEDIATES;
        double fwdPacked = t[0];
        double fwdBwdPacked = t[1];
        double fwdBwdSingle = t[2];
        double fwdBwdRecurrent = t[3];
        double flops = chunkedFlops(packed, c.valueHeads(), c.keyDim(), c.valueDim(), c.states(), recomputed);

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("T", c.tokens());
        out.put("H", c.heads());
        out.put("HV", c.valueHeads());
        out.put("K", c.keyDim());
        out.put("V", c.valueDim());
        out.put("docs", c.docs());
        out.put("case", c.states() ? "states" : "training");
        out.put("options", c.layer() ? "layer" : "plain");
        if (c.layer()) {
            out.put("lower_bound", packedProblem.options().lowerBound());
        }
        out.put("threads", c.threads());
        out.put("fwd_tokens_per_s", c.tokens() / fwdPacked);
        out.put("fwd_bwd_tokens_per_s", c.tokens() / fwdBwdPacked);
        out.put("fwd_bwd_ms", fwdBwdPacked * 1e3);
        out.put("unpacked_fwd_bwd_ms", fwdBwdSingle * 1e3);
        out.put("packed_over_unpacked", fwdBwdPacked / fwdBwdSingle);
        // The same ratio in CPU time: steadier on a shared host, blind to threads left idle by uneven work.
        out.put("packed_over_unpacked_cpu", cpu[1] / cpu[2]);
        // What preparing the rows in the chunks saves against preparing them once per call (1 under grouped value
        // heads, where both are the per-call form).
        out.put("per_call_fwd_bwd_ms", t[5] * 1e3);
        out.put("rows_in_chunks_speedup", t[5] / fwdBwdPacked);
        out.put("rows_in_chunks_speedup_cpu", cpu[5] / cpu[1]);
        out.put("recurrent_fwd_bwd_ms", fwdBwdRecurrent * 1e3);
        out.put("chunked_speedup", fwdBwdRecurrent / fwdBwdPacked);
        out.put("flops_fwd_bwd", flops);
        out.put("gflops", flops / fwdBwdPacked * 1e-9);
        out.put("matmul_gflops", matmulGflops);
        out.putAll(BlasComparison.measure(c.threads()));
        return out;
    }

    /**
     * {@code call} run as one task of {@code callers}, as a layer's call runs inside a training step: its parallel
     * loops then run on that pool's workers, the caller among them, which linger between the loops
     * ({@link io.kdapack.core.linalg.Team}), as {@link MatmulProbe}'s products do on theirs. Called from outside any
     * pool, every loop of the call would be a submission the workers pick up, the caller idle meanwhile.
     */
    private static Runnable inPool(ForkJoinPool callers, Runnable call) {
        return () -> callers.submit(call).join();
    }

    /**
     * Flops of one training forward plus its backward of the chunked backend (see the class comment); {@code states}
     * when every document has an initial state and its final state is returned with a gradient, {@code recomputed}
     * when the backward recomputes the chunk intermediates.
     */
    public static double chunkedFlops(Segments segments, int valueHeads, int keyDim, int valueDim, boolean states,
                                      boolean recomputed) {
        double total = 0;
        for (int n = 0; n < segments.count(); n++) {
            for (int first = 0; first < segments.length(n); first += KdaChunk.SIZE) {
                int len = Math.min(KdaChunk.SIZE, segments.length(n) - first);
                boolean entry = states || first > 0;
                boolean end = states || first + len < segments.length(n);
                total += chunkFlops(len, keyDim, valueDim, entry, end, recomputed);
            }
        }
        return total * valueHeads;
    }

    private static double chunkFlops(double l, double k, double v, boolean entry, boolean end, boolean recomputed) {
        double pairs = l * (l + 1) / 2;
        double product = 2 * l * k * v; // one L×K×V product
        double prepare = 7 * l * k + 4 * pairs * k + l * l * l / 3 + l * (l + 1) * (k + v) + (entry ? product : 0);
        double forward = prepare + 2 * pairs * v + (entry ? product : 0) + (end ? product + k * v : 0);
        double backward = 4 * pairs * v + l * (l + 1) * (k + v) + l * (l - 1) * (k + v) + 8 * pairs * k + 11 * l * k
                + (entry ? 4 * product : 0) + (end ? 2 * product : 0) + (recomputed ? prepare : 0);
        return forward + backward;
    }

    /** {@code docs} random lengths ≥ 1 summing to {@code tokens}: distinct random cut points. */
    static int[] randomCuSeqlens(Random rnd, int tokens, int docs) {
        int[] cuts = rnd.ints(1, tokens).distinct().limit(docs - 1L).sorted().toArray();
        int[] cu = new int[docs + 1];
        System.arraycopy(cuts, 0, cu, 1, cuts.length);
        cu[docs] = tokens;
        return cu;
    }

    /**
     * Inputs drawn like the golden files (unit q/k, logsigmoid gates, beta in (0,1)), or for the layer options raw
     * (standard normal q, k, gates, beta logits and dt_bias, A_log 0); with states, standard normal initial states
     * and upstream gradients of the final states.
     */
    private record Problem(KdaInputs inputs, KdaOptions options, float[] dO, float[] dHt, boolean states) {

        static Problem draw(Random rnd, Segments s, Config c) {
            int t = s.tokens();
            float[] q = c.layer() ? normal(rnd, t * c.heads() * c.keyDim()) : unitRows(rnd, t * c.heads(), c.keyDim());
            float[] k = c.layer() ? normal(rnd, t * c.heads() * c.keyDim()) : unitRows(rnd, t * c.heads(), c.keyDim());
            float[] v = normal(rnd, t * c.valueHeads() * c.valueDim());
            float[] g = normal(rnd, t * c.valueHeads() * c.keyDim());
            float[] beta = normal(rnd, t * c.valueHeads());
            if (!c.layer()) {
                for (int i = 0; i < g.length; i++) {
                    g[i] = (float) -KdaPreprocess.softplus(-g[i]);
                }
                for (int i = 0; i < beta.length; i++) {
                    beta[i] = KdaPreprocess.sigmoid(beta[i]);
                }
            }
            float[] aLog = c.layer() ? new float[c.valueHeads()] : null;
            float[] dtBias = c.layer() ? normal(rnd, c.valueHeads() * c.keyDim()) : null;
            int stateSize = s.count() * c.valueHeads() * c.keyDim() * c.valueDim();
            float[] h0 = c.states() ? normal(rnd, stateSize) : null;
            KdaInputs in = new KdaInputs(s, c.heads(), c.valueHeads(), c.keyDim(), c.valueDim(), q, k, v, g, beta,
                    aLog, dtBias, h0);
            return new Problem(in, c.options(), normal(rnd, v.length),
                    c.states() ? normal(rnd, stateSize) : null, c.states());
        }

        /** The same tokens over other segments, with states of their own when the case has them. */
        Problem withSegments(Segments s, Config c) {
            KdaInputs i = inputs;
            int stateSize = s.count() * c.valueHeads() * c.keyDim() * c.valueDim();
            Random rnd = new Random(2027);
            KdaInputs in = new KdaInputs(s, i.heads(), i.valueHeads(), i.keyDim(), i.valueDim(), i.q(), i.k(), i.v(),
                    i.g(), i.beta(), i.aLog(), i.dtBias(), states ? normal(rnd, stateSize) : null);
            return new Problem(in, options, dO, states ? normal(rnd, stateSize) : null, states);
        }

        void forward(KdaBackend backend) {
            try (Workspace.Scope step = Workspace.shared().open()) {
                backend.forward(inputs, options, states);
            }
        }

        /**
         * A training step's pair: the forward that keeps its tape, then the backward through it, in a workspace
         * scope as a training step runs them (the results, dead once the call returns, are lent by it).
         */
        void forwardBackward(KdaBackend backend) {
            try (Workspace.Scope step = Workspace.shared().open()) {
                backend.backward(backend.forwardForBackward(inputs, options, states), dO, dHt);
            }
        }

        private static float[] normal(Random rnd, int n) {
            float[] x = new float[n];
            for (int i = 0; i < n; i++) {
                x[i] = (float) rnd.nextGaussian();
            }
            return x;
        }

        private static float[] unitRows(Random rnd, int rows, int dim) {
            float[] x = normal(rnd, rows * dim);
            for (int r = 0; r < rows; r++) {
                double s = 0;
                for (int i = 0; i < dim; i++) {
                    s += x[r * dim + i] * x[r * dim + i];
                }
                float inv = (float) (1 / Math.sqrt(s));
                for (int i = 0; i < dim; i++) {
                    x[r * dim + i] *= inv;
                }
            }
            return x;
        }
    }
}
