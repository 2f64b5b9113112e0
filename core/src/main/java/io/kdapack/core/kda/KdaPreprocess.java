package io.kdapack.core.kda;

import io.kdapack.core.linalg.VectorWidth;
import java.util.Arrays;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The in-op preprocessing of architecture §2 and its backward: q/k l2 norm, the scale of q, the gate (softplus
 * or lower-bound form) and the beta sigmoid. Only tokens inside a segment are touched; padding keeps
 * zero values and zero gradients. Every {@code exp} sees an argument ≤ 0 except {@code exp(A_log)}, which is
 * a parameter and not a decay.
 *
 * <p>The l2 norm and the lower-bound gate, the work per element of a KDA layer's call, run on vectors: the norms'
 * sums through {@link VectorWidth#dot}, the gate's sigmoid through the chunks' exponential ({@link ChunkMath#exp}),
 * each scalar tail by the same operations, so results do not depend on the vector width. (They were scalar, the
 * sigmoid in double through {@code Math.exp}: 40 % of a layer-configured call's time, more than its chunks' work
 * besides the products.) The softplus gate likewise, its {@code log1p} a series of its own; the beta sigmoid
 * ({@code T·HV} elements) stays scalar, in double.
 */
public final class KdaPreprocess {

    private static final VectorSpecies<Float> SPECIES = VectorWidth.SPECIES;
    private static final int LANES = VectorWidth.LANES;

    /**
     * Tokens per block of work. Blocks are fixed by the token count alone, so that the per-block sums of
     * the backward, combined in block order, give the same bits for any thread count.
     */
    static final int TOKEN_BLOCK = 256;

    /** Runs {@code block.accept(b)} for {@code b = 0 … count−1}, in any order and possibly in parallel. */
    @FunctionalInterface
    public interface BlockRunner {
        void run(int count, IntConsumer block);
    }

    /** Runs the blocks one after another on the calling thread. */
    public static final BlockRunner SERIAL = (count, block) -> {
        for (int b = 0; b < count; b++) {
            block.accept(b);
        }
    };

    private KdaPreprocess() {
    }

    /**
     * What the recurrence consumes besides the values (which it reads token-major, as given), head-major so that
     * each (sequence, value head) reads contiguous rows: token p of value head vh is row {@code vh·T + p}. q and k
     * are repeated for every value head of their group. Rows of padding tokens are not written (zero in fresh
     * arrays) and never read.
     *
     * @param q     {@code [HV,T,K]} normalised (with l2norm) and multiplied by the scale
     * @param k     {@code [HV,T,K]} normalised (with l2norm)
     * @param decay {@code [HV,T,K]} log-space decay
     * @param beta  {@code [HV,T]} beta in (0,1)
     * @param qNorm {@code [T,H]} {@code sqrt(Σ q² + eps)}, or null without l2norm
     * @param kNorm {@code [T,H]} likewise for k
     * @param scale the scale applied to q
     */
    public record Prepared(float[] q, float[] k, float[] decay, float[] beta, float[] qNorm,
                           float[] kNorm, float scale) {
    }

    /** Gradients with respect to the raw inputs of the gate and beta; {@code dALog}, {@code dDtBias} null when absent. */
    public record RawGradients(float[] dq, float[] dk, float[] dg, float[] dBeta, float[] dALog, float[] dDtBias) {
    }

    /** Applies the preprocessing of {@code options} to validated inputs, on the calling thread. */
    public static Prepared forward(KdaInputs in, KdaOptions options) {
        return forward(in, options, SERIAL, float[]::new);
    }

    /**
     * Applies the preprocessing of {@code options} to validated inputs, blocks of tokens run by {@code runner},
     * the head-major tensors from {@code buffers} (which may hand out arrays that are not zero).
     */
    public static Prepared forward(KdaInputs in, KdaOptions options, BlockRunner runner, IntFunction<float[]> buffers) {
        int t = in.tokens();
        int h = in.heads();
        int hv = in.valueHeads();
        int group = hv / h;
        int kd = in.keyDim();
        float scale = options.scaleFor(kd);
        float[] q = buffers.apply(t * hv * kd);
        float[] k = buffers.apply(t * hv * kd);
        float[] decay = buffers.apply(t * hv * kd);
        float[] beta = buffers.apply(t * hv);
        float[] qNorm = options.qkL2Norm() ? new float[t * h] : null;
        float[] kNorm = options.qkL2Norm() ? new float[t * h] : null;
        boolean[] inside = insideSegments(in.segments());
        Gate gate = new Gate(in, options);
        runner.run(blocks(t), b -> {
            for (int p = b * TOKEN_BLOCK, end = Math.min(t, p + TOKEN_BLOCK); p < end; p++) {
                if (!inside[p]) {
                    continue;
                }
                for (int head = 0; head < h; head++) {
                    int row = p * h + head;
                    int first = (head * group * t + p) * kd;
                    prepareQk(in.q(), row, q, first, qNorm, row, kd, scale);
                    prepareQk(in.k(), row, k, first, kNorm, row, kd, 1f);
                    for (int copy = 1; copy < group; copy++) {
                        System.arraycopy(q, first, q, first + copy * t * kd, kd);
                        System.arraycopy(k, first, k, first + copy * t * kd, kd);
                    }
                }
                for (int vh = 0; vh < hv; vh++) {
                    int row = p * hv + vh;
                    int headRow = vh * t + p;
                    gate.decayRow(vh, in.g(), row * kd, decay, headRow * kd);
                    beta[headRow] = preparedBeta(in.beta()[row], options.betaSigmoid());
                }
            }
        });
        return new Prepared(q, k, decay, beta, qNorm, kNorm, scale);
    }

    /**
     * Maps gradients with respect to the prepared tensors back to the raw inputs (token-major, like the
     * inputs), on the calling thread; see {@link #backward(KdaInputs, KdaOptions, Prepared, float[], float[],
     * float[], float[], BlockRunner)}.
     */
    public static RawGradients backward(KdaInputs in, KdaOptions options, Prepared prepared,
                                        float[] dq, float[] dk, float[] dDecay, float[] dBeta) {
        return backward(in, options, prepared, dq, dk, dDecay, dBeta, SERIAL);
    }

    /**
     * Maps gradients with respect to the prepared tensors back to the raw inputs (token-major, like the
     * inputs), blocks of tokens run by {@code runner}. The value heads of a q/k head are summed in ascending
     * order; the sums over tokens ({@code dALog}, {@code dDtBias}) are taken in double per block, in token
     * order, and the blocks' sums added in block order, so results do not depend on threads.
     *
     * @param dq     {@code [HV,T,K]} gradient of the prepared (normalised, scaled) q of each value head
     * @param dk     {@code [HV,T,K]} gradient of the prepared k of each value head
     * @param dDecay {@code [HV,T,K]} gradient of the decay
     * @param dBeta  {@code [HV,T]} gradient of beta in (0,1)
     */
    public static RawGradients backward(KdaInputs in, KdaOptions options, Prepared prepared,
                                        float[] dq, float[] dk, float[] dDecay, float[] dBeta, BlockRunner runner) {
        int t = in.tokens();
        int h = in.heads();
        int hv = in.valueHeads();
        int group = hv / h;
        int kd = in.keyDim();
        float[] rawDq = new float[t * h * kd];
        float[] rawDk = new float[t * h * kd];
        float[] rawDg = new float[t * hv * kd];
        float[] rawDBeta = new float[t * hv];
        Gate gate = new Gate(in, options);
        double[] aLogRows = in.aLog() != null ? new double[t * hv] : null;
        boolean[] inside = insideSegments(in.segments());
        runner.run(blocks(t), b -> {
            float[] dqSum = new float[kd];
            float[] dkSum = new float[kd];
            float[] slopes = new float[kd];
            for (int p = b * TOKEN_BLOCK, end = Math.min(t, p + TOKEN_BLOCK); p < end; p++) {
                if (!inside[p]) {
                    continue;
                }
                for (int head = 0; head < h; head++) {
                    int row = p * h + head;
                    int first = (head * group * t + p) * kd;
                    sumGroup(dq, first, t * kd, group, dqSum);
                    sumGroup(dk, first, t * kd, group, dkSum);
                    qkBackward(dqSum, 0, rawDq, row, prepared.q(), first, prepared.qNorm(), row, kd,
                            prepared.scale());
                    qkBackward(dkSum, 0, rawDk, row, prepared.k(), first, prepared.kNorm(), row, kd, 1f);
                }
                for (int vh = 0; vh < hv; vh++) {
                    int row = p * hv + vh;
                    int headRow = vh * t + p;
                    gate.backwardRow(vh, in.g(), row * kd, dDecay, prepared.decay(), headRow * kd, rawDg, slopes,
                            aLogRows, row);
                    rawDBeta[row] = rawBetaGradient(dBeta[headRow], prepared.beta()[headRow], options.betaSigmoid());
                }
            }
        });
        return withParameterGradients(in, options, inside, rawDq, rawDk, rawDg, rawDBeta, aLogRows, runner);
    }

    /**
     * The raw gradients with those of the gate's parameters, sums over the segment tokens (padding adds nothing):
     * {@code dt_bias}'s {@code [HV·K]} of the gate's raw gradient {@code dg [T,HV,K]} (the bias is added to every
     * token's gate before the activation), and {@code A_log}'s {@code [HV]} of each row's term
     * {@code aLogRows [T,HV]} ({@link Gate#backwardRow}; null without {@code A_log}). Both in double per block of
     * {@value #TOKEN_BLOCK} tokens in token order, the blocks' sums added in block order: the same bits for any
     * thread count, whether the rows were prepared per call ({@link #backward}) or per chunk ({@link Rows}).
     */
    static RawGradients withParameterGradients(KdaInputs in, KdaOptions options, float[] dq, float[] dk, float[] dg,
                                               float[] dBeta, double[] aLogRows, BlockRunner runner) {
        return withParameterGradients(in, options, insideSegments(in.segments()), dq, dk, dg, dBeta, aLogRows, runner);
    }

    /** {@link #withParameterGradients} given which tokens are {@code inside} the segments. */
    private static RawGradients withParameterGradients(KdaInputs in, KdaOptions options, boolean[] inside, float[] dq,
                                                       float[] dk, float[] dg, float[] dBeta, double[] aLogRows,
                                                       BlockRunner runner) {
        int hv = in.valueHeads();
        float[] dALog = aLogRows == null ? null : tokenSums(in, inside, hv, runner, (p, sum) -> {
            for (int vh = 0; vh < hv; vh++) {
                sum[vh] += aLogRows[p * hv + vh];
            }
        });
        int width = hv * in.keyDim();
        float[] dDtBias = null;
        if (options.gate() != KdaOptions.Gate.NONE) {
            dDtBias = tokenSums(in, inside, width, runner, (p, sum) -> {
                for (int i = 0, at = p * width; i < width; i++) {
                    sum[i] += dg[at + i];
                }
            });
        }
        return new RawGradients(dq, dk, dg, dBeta, dALog, dDtBias);
    }

    /** Adds token {@code p}'s terms to the running sums. */
    @FunctionalInterface
    private interface TokenTerms {
        void addTo(int p, double[] sum);
    }

    /**
     * {@code width} sums over the tokens {@code inside} the segments, in double per block of tokens, the blocks added
     * in order.
     */
    private static float[] tokenSums(KdaInputs in, boolean[] inside, int width, BlockRunner runner,
                                     TokenTerms terms) {
        int t = in.tokens();
        double[][] sums = new double[blocks(t)][width];
        runner.run(sums.length, b -> {
            for (int p = b * TOKEN_BLOCK, end = Math.min(t, p + TOKEN_BLOCK); p < end; p++) {
                if (inside[p]) {
                    terms.addTo(p, sums[b]);
                }
            }
        });
        return sumBlocks(sums, width);
    }

    /**
     * The same preprocessing one value head's rows at a time, for kernels that prepare a chunk's rows when they
     * compute it (from the raw, token-major inputs) rather than read head-major tensors prepared once per call: the
     * same operations on each row, so the prepared rows and the raw gradients of q, k, g and beta are bitwise those of
     * {@link #forward} and {@link #backward}. Only where each value head has a q/k head of its own ({@code HV = H}):
     * under grouped value heads a q/k row's gradient sums over the group, across tasks.
     */
    static final class Rows {
        private final KdaInputs in;
        private final int heads;
        private final int kd;
        private final float scale;
        private final boolean l2Norm;
        private final boolean betaSigmoid;
        private final Gate gate;

        Rows(KdaInputs in, KdaOptions options) {
            if (in.valueHeads() != in.heads()) {
                throw new IllegalArgumentException("per-row preprocessing needs HV = H, got H = " + in.heads()
                        + ", HV = " + in.valueHeads());
            }
            this.in = in;
            heads = in.heads();
            kd = in.keyDim();
            scale = options.scaleFor(kd);
            l2Norm = options.qkL2Norm();
            betaSigmoid = options.betaSigmoid();
            gate = new Gate(in, options);
        }

        /** Prepares tokens {@code p0 … p0+len−1} of value head {@code vh} into rows {@code 0 … len−1} of {@code s}. */
        void forward(int vh, int p0, int len, PreparedRows s) {
            for (int r = 0; r < len; r++) {
                int row = (p0 + r) * heads + vh;
                prepareQk(in.q(), row, s.q, r * kd, l2Norm ? s.qNorm : null, r, kd, scale);
                prepareQk(in.k(), row, s.k, r * kd, l2Norm ? s.kNorm : null, r, kd, 1f);
                gate.decayRow(vh, in.g(), row * kd, s.decay, r * kd);
                s.beta[r] = preparedBeta(in.beta()[row], betaSigmoid);
            }
        }

        /**
         * Backward of {@link #forward} of the same rows {@code s}, given their gradients {@code d}: the raw gradients
         * of those tokens into the token-major {@code dq}, {@code dk [T,H,K]}, {@code dg [T,HV,K]} and
         * {@code dBeta [T,HV]}, and each row's term of {@code A_log}'s gradient into {@code aLogRows [T,HV]} (null
         * without {@code A_log}; see {@link #withParameterGradients}).
         */
        void backward(int vh, int p0, int len, PreparedRows s, RowGradients d, float[] dq, float[] dk, float[] dg,
                      float[] dBeta, double[] aLogRows) {
            for (int r = 0; r < len; r++) {
                int row = (p0 + r) * heads + vh;
                int at = r * kd;
                qkBackward(d.dq, at, dq, row, s.q, at, l2Norm ? s.qNorm : null, r, kd, scale);
                qkBackward(d.dk, at, dk, row, s.k, at, l2Norm ? s.kNorm : null, r, kd, 1f);
                gate.backwardRow(vh, in.g(), row * kd, d.dDecay, s.decay, at, dg, d.slopes, aLogRows, row);
                dBeta[row] = rawBetaGradient(d.dBeta[r], s.beta[r], betaSigmoid);
            }
        }
    }

    /**
     * A chunk's rows prepared by {@link Rows}, from row 0: q, k and the decay {@code [rows,K]}, beta and the norms of
     * q and k {@code [rows]}.
     */
    static final class PreparedRows {
        final float[] q;
        final float[] k;
        final float[] decay;
        final float[] beta;
        final float[] qNorm;
        final float[] kNorm;

        PreparedRows(int rows, int keyDim) {
            q = new float[rows * keyDim];
            k = new float[rows * keyDim];
            decay = new float[rows * keyDim];
            beta = new float[rows];
            qNorm = new float[rows];
            kNorm = new float[rows];
        }
    }

    /**
     * The gradients of a chunk's {@link PreparedRows}, from row 0: of q, k and the decay {@code [rows,K]} and of beta
     * {@code [rows]}; {@code slopes [K]} is scratch.
     */
    static final class RowGradients {
        final float[] dq;
        final float[] dk;
        final float[] dDecay;
        final float[] dBeta;
        final float[] slopes;

        RowGradients(int rows, int keyDim) {
            dq = new float[rows * keyDim];
            dk = new float[rows * keyDim];
            dDecay = new float[rows * keyDim];
            dBeta = new float[rows];
            slopes = new float[keyDim];
        }
    }

    /** Beta as the recurrence consumes it: {@code sigmoid(raw)} with the beta sigmoid in the op, else raw. */
    private static float preparedBeta(float raw, boolean sigmoid) {
        return sigmoid ? sigmoid(raw) : raw;
    }

    /** The gradient of the raw beta given that of the {@link #preparedBeta} {@code beta}. */
    private static float rawBetaGradient(float dBeta, float beta, boolean sigmoid) {
        return sigmoid ? dBeta * beta * (1f - beta) : dBeta;
    }

    private static int blocks(int tokens) {
        return (tokens + TOKEN_BLOCK - 1) / TOKEN_BLOCK;
    }

    /** Whether each token lies in a segment (padding does not). */
    private static boolean[] insideSegments(Segments s) {
        boolean[] inside = new boolean[s.tokens()];
        for (int n = 0; n < s.count(); n++) {
            Arrays.fill(inside, s.start(n), s.end(n), true);
        }
        return inside;
    }

    /** The per-block sums added in block order, rounded to float. */
    private static float[] sumBlocks(double[][] perBlock, int size) {
        double[] total = new double[size];
        for (double[] block : perBlock) {
            for (int i = 0; i < size; i++) {
                total[i] += block[i];
            }
        }
        float[] out = new float[size];
        for (int i = 0; i < size; i++) {
            out[i] = (float) total[i];
        }
        return out;
    }

    /** {@code out = Σ_c x[first + c·stride …+K]} over the {@code group} copies, in ascending order. */
    private static void sumGroup(float[] x, int first, int stride, int group, float[] out) {
        System.arraycopy(x, first, out, 0, out.length);
        for (int c = 1; c < group; c++) {
            for (int i = 0; i < out.length; i++) {
                out[i] += x[first + c * stride + i];
            }
        }
    }

    /**
     * The gate of a call with its per-value-head constant {@code exp(A_log)} computed once, so that the work
     * per element is a softplus or a sigmoid; the values are bitwise those of computing it per element.
     */
    private static final class Gate {

        private final KdaOptions.Gate form;
        private final int keyDim;
        private final float[] dtBias;
        private final float lowerBound;
        private final boolean withALog;
        /** SOFTPLUS: {@code −exp(A_log)} per value head as a float. */
        private final float[] minusA;
        /** LOWER_BOUND: {@code exp(A_log)} per value head as a float, 1 without {@code A_log}. */
        private final float[] aScale;

        Gate(KdaInputs in, KdaOptions options) {
            form = options.gate();
            keyDim = in.keyDim();
            dtBias = in.dtBias();
            lowerBound = options.lowerBound();
            withALog = in.aLog() != null;
            int heads = in.valueHeads();
            minusA = new float[heads];
            aScale = new float[heads];
            for (int vh = 0; vh < heads; vh++) {
                switch (form) {
                    case SOFTPLUS -> minusA[vh] = (float) -Math.exp(in.aLog()[vh]);
                    case LOWER_BOUND -> aScale[vh] = withALog ? (float) Math.exp(in.aLog()[vh]) : 1f;
                    case NONE -> { }
                }
            }
        }

        /** The gate's pre-activations {@code x = g + dt_bias} of the lanes from {@code g[gAt]} and {@code dtBias[biasAt]}. */
        private FloatVector preActivation(float[] g, int gAt, int biasAt) {
            return FloatVector.fromArray(SPECIES, g, gAt).add(FloatVector.fromArray(SPECIES, dtBias, biasAt));
        }

        /** {@link #preActivation} of one element. */
        private float floatPreActivation(float[] g, int gAt, int biasAt) {
            return g[gAt] + dtBias[biasAt];
        }

        /** {@code decay[at + i]}, the log-space decay of raw gate entry {@code g[gAt + i]} of value head vh, i < K. */
        void decayRow(int vh, float[] g, int gAt, float[] decay, int at) {
            switch (form) {
                case NONE -> System.arraycopy(g, gAt, decay, at, keyDim);
                case SOFTPLUS -> {
                    float minus = minusA[vh];
                    int bias = vh * keyDim;
                    int i = 0;
                    for (int bound = SPECIES.loopBound(keyDim); i < bound; i += LANES) {
                        FloatVector x = preActivation(g, gAt + i, bias + i);
                        softplus(x).mul(minus).intoArray(decay, at + i);
                    }
                    for (; i < keyDim; i++) {
                        decay[at + i] = minus * floatSoftplus(floatPreActivation(g, gAt + i, bias + i));
                    }
                }
                case LOWER_BOUND -> {
                    float a = aScale[vh];
                    int bias = vh * keyDim;
                    int i = 0;
                    for (int bound = SPECIES.loopBound(keyDim); i < bound; i += LANES) {
                        FloatVector x = preActivation(g, gAt + i, bias + i);
                        sigmoid(x.mul(a)).mul(lowerBound).intoArray(decay, at + i);
                    }
                    for (; i < keyDim; i++) {
                        float x = floatPreActivation(g, gAt + i, bias + i);
                        decay[at + i] = lowerBound * floatSigmoid(a * x);
                    }
                }
            }
        }

        /**
         * Backward of {@link #decayRow}: {@code dg[gAt + i] = dDecay[at + i] · ∂decay/∂x} with
         * {@code x = g + dt_bias} (whose sums over tokens are {@code dt_bias}'s gradient:
         * {@link #withParameterGradients}).
         * The row's term of {@code A_log}'s gradient, {@code Σ_i dDecay · ∂decay/∂A_log} in double, i in order, goes
         * to {@code aLogRows[aLogAt]} (null without {@code A_log}). {@code slopes} is K floats of scratch.
         */
        void backwardRow(int vh, float[] g, int gAt, float[] dDecay, float[] decay, int at, float[] dg,
                         float[] slopes, double[] aLogRows, int aLogAt) {
            double aLogTerm = 0;
            switch (form) {
                case NONE -> System.arraycopy(dDecay, at, dg, gAt, keyDim);
                case SOFTPLUS -> {
                    float minus = minusA[vh];
                    int bias = vh * keyDim;
                    int i = 0;
                    for (int bound = SPECIES.loopBound(keyDim); i < bound; i += LANES) {
                        FloatVector x = preActivation(g, gAt + i, bias + i);
                        FloatVector.fromArray(SPECIES, dDecay, at + i).mul(sigmoid(x).mul(minus))
                                .intoArray(dg, gAt + i);
                    }
                    for (; i < keyDim; i++) {
                        dg[gAt + i] = dDecay[at + i] * (floatSigmoid(floatPreActivation(g, gAt + i, bias + i)) * minus);
                    }
                    for (i = 0; i < keyDim; i++) {
                        // decay = −exp(A_log)·softplus(x), so its A_log-derivative is itself.
                        aLogTerm += (double) dDecay[at + i] * decay[at + i];
                    }
                }
                case LOWER_BOUND -> {
                    float a = aScale[vh];
                    int bias = vh * keyDim;
                    // The float part on vectors (dg, and the sigmoids' slopes kept for A_log's terms), then the terms.
                    int i = 0;
                    for (int bound = SPECIES.loopBound(keyDim); i < bound; i += LANES) {
                        FloatVector x = preActivation(g, gAt + i, bias + i);
                        FloatVector slope = sigmoidSlope(x.mul(a));
                        slope.intoArray(slopes, i);
                        FloatVector.fromArray(SPECIES, dDecay, at + i).mul(slope.mul(lowerBound).mul(a))
                                .intoArray(dg, gAt + i);
                    }
                    for (; i < keyDim; i++) {
                        float slope = floatSigmoidSlope(a * (floatPreActivation(g, gAt + i, bias + i)));
                        slopes[i] = slope;
                        dg[gAt + i] = dDecay[at + i] * (slope * lowerBound * a);
                    }
                    if (withALog) {
                        for (i = 0; i < keyDim; i++) {
                            float x = floatPreActivation(g, gAt + i, bias + i);
                            aLogTerm += (double) dDecay[at + i] * ((double) lowerBound * slopes[i] * a * x);
                        }
                    }
                }
            }
            if (aLogRows != null) {
                aLogRows[aLogAt] = aLogTerm;
            }
        }
    }

    /**
     * Row {@code row} of {@code raw [T·H,K]}, normalised (its norm to {@code norms[normAt]}, unless norms is null)
     * and scaled, into {@code out[at …+dim]}.
     */
    private static void prepareQk(float[] raw, int row, float[] out, int at, float[] norms, int normAt, int dim,
                                  float scale) {
        int base = row * dim;
        float factor = scale;
        if (norms != null) {
            float sumSq = VectorWidth.dot(dim, raw, base, raw, base);
            float norm = (float) Math.sqrt((double) sumSq + KdaOptions.L2NORM_EPS);
            norms[normAt] = norm;
            factor = scale / norm;
        }
        ChunkMath.scale(dim, factor, raw, base, out, at);
    }

    /**
     * Backward of {@code out = scale · x / ‖x‖} into row {@code row} of {@code dRaw [T·H,K]}, given the gradient
     * {@code dPrepared[dAt …]} and the prepared row {@code prepared[at …]} of norm {@code norms[normAt]}:
     * {@code dx = scale · (dy − y (y·dy)) / ‖x‖} with y the unit vector.
     */
    private static void qkBackward(float[] dPrepared, int dAt, float[] dRaw, int row, float[] prepared, int at,
                                   float[] norms, int normAt, int dim, float scale) {
        int base = row * dim;
        if (norms == null) {
            ChunkMath.scale(dim, scale, dPrepared, dAt, dRaw, base);
            return;
        }
        // With prepared = scale·y the gradient of y is dy = scale·dPrepared, and y·dy = prepared·dPrepared.
        float yTimesDot = VectorWidth.dot(dim, prepared, at, dPrepared, dAt) / scale;
        float norm = norms[normAt];
        int i = 0;
        for (int bound = SPECIES.loopBound(dim); i < bound; i += LANES) {
            FloatVector.fromArray(SPECIES, dPrepared, dAt + i).mul(scale)
                    .sub(FloatVector.fromArray(SPECIES, prepared, at + i).mul(yTimesDot)).div(norm)
                    .intoArray(dRaw, base + i);
        }
        for (; i < dim; i++) {
            dRaw[base + i] = (scale * dPrepared[dAt + i] - prepared[at + i] * yTimesDot) / norm;
        }
    }

    /** {@code log(1 + exp(x))} without overflow: the exponent is always ≤ 0. */
    public static double softplus(double x) {
        return x > 0 ? x + log1p(Math.exp(-x)) : log1p(Math.exp(x));
    }

    /**
     * {@code log(1 + y)} for {@code 0 ≤ y ≤ 1}, to double precision far beyond the float result: the
     * intrinsic {@code Math.log} of {@code 1 + y} (rounding {@code 1 + y} costs at most 1e-12 relative once
     * {@code y ≥ 1e-4}), below that the series {@code y − y²/2 + y³/3} (truncation under 3e-13 relative).
     * {@code Math.log1p} is the pure-Java fdlibm routine and cost a tenth of a training step.
     */
    private static double log1p(double y) {
        return y < 1e-4 ? y * (1 - y * (0.5 - y / 3)) : Math.log(1 + y);
    }

    /**
     * {@code 1 / (1 + exp(−y))} in float with the exponent always ≤ 0: {@code e = exp(−|y|)} by the chunks'
     * exponential, then {@code 1 / (1 + e)} for {@code y ≥ 0} and {@code e / (1 + e)} below. (Not the activations'
     * {@code linalg.ExpKernels.sigmoid}, which forms {@code exp(−y)} with its argument clamped at 88: this one shares
     * its {@code e} with {@link #sigmoidSlope} and {@link #softplus}, and a gate far below 0 gives exactly 0.)
     */
    static FloatVector sigmoid(FloatVector y) {
        FloatVector e = ChunkMath.exp(y.abs().neg());
        FloatVector one = FloatVector.broadcast(SPECIES, 1f);
        return one.blend(e, y.compare(VectorOperators.LT, 0f)).div(one.add(e));
    }

    /** {@link #sigmoid(FloatVector)} of one float, by the same operations: the scalar tails' sigmoid. */
    static float floatSigmoid(float y) {
        float e = ChunkMath.exp(-Math.abs(y));
        return (y < 0f ? e : 1f) / (1f + e);
    }

    /**
     * The sigmoid's derivative {@code σ(y)·(1 − σ(y)) = e / (1 + e)²} with {@code e = exp(−|y|)}: no {@code 1 − σ}
     * formed, which loses the digits of σ where it nears 1 (the lower-bound gate's A_log gradient is a sum of such
     * terms).
     */
    static FloatVector sigmoidSlope(FloatVector y) {
        FloatVector e = ChunkMath.exp(y.abs().neg());
        FloatVector onePlusE = e.add(1f);
        return e.div(onePlusE.mul(onePlusE));
    }

    /** {@link #sigmoidSlope(FloatVector)} of one float, by the same operations. */
    static float floatSigmoidSlope(float y) {
        float e = ChunkMath.exp(-Math.abs(y));
        float onePlusE = e + 1f;
        return e / (onePlusE * onePlusE);
    }

    /**
     * {@code log(1 + exp(x))} in float, {@code max(x, 0) + log1p(exp(−|x|))} with the chunks' exponential and
     * {@link #log1pOfUnit}.
     */
    static FloatVector softplus(FloatVector x) {
        return x.max(0f).add(log1pOfUnit(ChunkMath.exp(x.abs().neg())));
    }

    /** {@link #softplus(FloatVector)} of one float, by the same operations. */
    static float floatSoftplus(float x) {
        return Math.max(x, 0f) + floatLog1pOfUnit(ChunkMath.exp(-Math.abs(x)));
    }

    private static final float SQRT_2 = 1.41421356f;
    private static final float LN_2 = 0.693147181f;

    /**
     * {@code log(1 + e)} for {@code 0 ≤ e ≤ 1} in float: {@code u = 1 + e} rounded, halved above √2
     * ({@code log u = log m + ln 2}), {@code log m = 2 atanh(s)} with {@code s = (m − 1)/(m + 1)}, |s| ≤ 0.172, by its
     * series to {@code s⁹} (truncation under 1e-9 relative), times {@code e / (u − 1)} (Goldberg's correction for the
     * rounding of {@code 1 + e}; {@code e} itself where {@code 1 + e} rounds to 1).
     */
    static FloatVector log1pOfUnit(FloatVector e) {
        FloatVector u = e.add(1f);
        VectorMask<Float> high = u.compare(VectorOperators.GT, SQRT_2);
        FloatVector m = u.blend(u.mul(0.5f), high);
        FloatVector s = m.sub(1f).div(m.add(1f));
        FloatVector s2 = s.mul(s);
        FloatVector series = s2.mul(2f / 9f).add(2f / 7f).mul(s2).add(2f / 5f).mul(s2).add(2f / 3f).mul(s2).add(2f);
        FloatVector log = series.mul(s).add(FloatVector.zero(SPECIES).blend(LN_2, high));
        FloatVector uMinus1 = u.sub(1f);
        return e.blend(log.mul(e.div(uMinus1)), uMinus1.compare(VectorOperators.NE, 0f));
    }

    /** {@link #log1pOfUnit(FloatVector)} of one float, by the same operations. */
    static float floatLog1pOfUnit(float e) {
        float u = e + 1f;
        boolean high = u > SQRT_2;
        float m = high ? u * 0.5f : u;
        float s = (m - 1f) / (m + 1f);
        float s2 = s * s;
        float series = (((s2 * (2f / 9f) + 2f / 7f) * s2 + 2f / 5f) * s2 + 2f / 3f) * s2 + 2f;
        float log = series * s + (high ? LN_2 : 0f);
        float uMinus1 = u - 1f;
        return uMinus1 != 0f ? log * (e / uMinus1) : e;
    }

    /** {@code 1 / (1 + exp(−x))} with the exponent always ≤ 0. */
    public static float sigmoid(double x) {
        if (x >= 0) {
            return (float) (1.0 / (1.0 + Math.exp(-x)));
        }
        double e = Math.exp(x);
        return (float) (e / (1.0 + e));
    }
}
