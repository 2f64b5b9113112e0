package io.kdapack.core.kda;

import java.util.Arrays;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;

/**
 * The in-op preprocessing of DESIGN §2 and its backward: q/k l2 norm, the scale of q, the gate (softplus
 * or lower-bound form) and the beta sigmoid. Only tokens inside a segment are touched; padding keeps
 * zero values and zero gradients. Every {@code exp} sees an argument ≤ 0 except {@code exp(A_log)}, which is
 * a parameter and not a decay.
 */
public final class KdaPreprocess {

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
     * What the recurrence consumes, head-major so that each (sequence, value head) reads contiguous rows:
     * token p of value head vh is row {@code vh·T + p}. q and k are repeated for every value head of their
     * group. Rows of padding tokens are not written (zero in fresh arrays) and never read.
     *
     * @param q     {@code [HV,T,K]} normalised (with l2norm) and multiplied by the scale
     * @param k     {@code [HV,T,K]} normalised (with l2norm)
     * @param v     {@code [HV,T,V]} the values
     * @param decay {@code [HV,T,K]} log-space decay
     * @param beta  {@code [HV,T]} beta in (0,1)
     * @param qNorm {@code [T,H]} {@code sqrt(Σ q² + eps)}, or null without l2norm
     * @param kNorm {@code [T,H]} likewise for k
     * @param scale the scale applied to q
     */
    public record Prepared(float[] q, float[] k, float[] v, float[] decay, float[] beta, float[] qNorm,
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
        int vd = in.valueDim();
        float scale = options.scaleFor(kd);
        float[] q = buffers.apply(t * hv * kd);
        float[] k = buffers.apply(t * hv * kd);
        float[] v = buffers.apply(t * hv * vd);
        float[] decay = buffers.apply(t * hv * kd);
        float[] beta = buffers.apply(t * hv);
        float[] qNorm = options.qkL2Norm() ? new float[t * h] : null;
        float[] kNorm = options.qkL2Norm() ? new float[t * h] : null;
        boolean[] inside = insideSegments(in.segments());
        runner.run(blocks(t), b -> {
            for (int p = b * TOKEN_BLOCK, end = Math.min(t, p + TOKEN_BLOCK); p < end; p++) {
                if (!inside[p]) {
                    continue;
                }
                for (int head = 0; head < h; head++) {
                    int row = p * h + head;
                    int first = (head * group * t + p) * kd;
                    prepareQk(in.q(), row, q, first, qNorm, kd, scale);
                    prepareQk(in.k(), row, k, first, kNorm, kd, 1f);
                    for (int copy = 1; copy < group; copy++) {
                        System.arraycopy(q, first, q, first + copy * t * kd, kd);
                        System.arraycopy(k, first, k, first + copy * t * kd, kd);
                    }
                }
                for (int vh = 0; vh < hv; vh++) {
                    int row = p * hv + vh;
                    int headRow = vh * t + p;
                    for (int i = 0; i < kd; i++) {
                        decay[headRow * kd + i] = decay(in, options, vh, i, in.g()[row * kd + i]);
                    }
                    System.arraycopy(in.v(), row * vd, v, headRow * vd, vd);
                    beta[headRow] = options.betaSigmoid() ? sigmoid(in.beta()[row]) : in.beta()[row];
                }
            }
        });
        return new Prepared(q, k, v, decay, beta, qNorm, kNorm, scale);
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
        boolean gateInOp = options.gate() != KdaOptions.Gate.NONE;
        boolean withALog = in.aLog() != null;
        int blocks = blocks(t);
        double[][] dALogSums = new double[blocks][hv];
        double[][] dDtBiasSums = new double[blocks][hv * kd];
        boolean[] inside = insideSegments(in.segments());
        runner.run(blocks, b -> {
            double[] dALogSum = dALogSums[b];
            double[] dDtBiasSum = dDtBiasSums[b];
            float[] dqSum = new float[kd];
            float[] dkSum = new float[kd];
            for (int p = b * TOKEN_BLOCK, end = Math.min(t, p + TOKEN_BLOCK); p < end; p++) {
                if (!inside[p]) {
                    continue;
                }
                for (int head = 0; head < h; head++) {
                    int row = p * h + head;
                    int first = (head * group * t + p) * kd;
                    sumGroup(dq, first, t * kd, group, dqSum);
                    sumGroup(dk, first, t * kd, group, dkSum);
                    qkBackward(dqSum, rawDq, row, prepared.q(), first, prepared.qNorm(), kd, prepared.scale());
                    qkBackward(dkSum, rawDk, row, prepared.k(), first, prepared.kNorm(), kd, 1f);
                }
                for (int vh = 0; vh < hv; vh++) {
                    int row = p * hv + vh;
                    int headRow = vh * t + p;
                    for (int i = 0; i < kd; i++) {
                        int e = row * kd + i;
                        float dDecayE = dDecay[headRow * kd + i];
                        if (!gateInOp) {
                            rawDg[e] = dDecayE;
                            continue;
                        }
                        float x = in.g()[e] + in.dtBias()[vh * kd + i];
                        float dx = dDecayE * gateSlope(in, options, vh, x);
                        rawDg[e] = dx;
                        dDtBiasSum[vh * kd + i] += dx;
                        if (withALog) {
                            dALogSum[vh] += (double) dDecayE
                                    * gateALogSlope(in, options, vh, x, prepared.decay()[headRow * kd + i]);
                        }
                    }
                    float bt = prepared.beta()[headRow];
                    rawDBeta[row] = options.betaSigmoid() ? dBeta[headRow] * bt * (1f - bt) : dBeta[headRow];
                }
            }
        });
        float[] dALog = withALog ? sumBlocks(dALogSums, hv) : null;
        float[] dDtBias = gateInOp ? sumBlocks(dDtBiasSums, hv * kd) : null;
        return new RawGradients(rawDq, rawDk, rawDg, rawDBeta, dALog, dDtBias);
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

    /** The log-space decay of raw gate entry {@code g} of value head {@code vh}, key channel {@code i}. */
    static float decay(KdaInputs in, KdaOptions options, int vh, int i, float g) {
        return switch (options.gate()) {
            case NONE -> g;
            case SOFTPLUS -> (float) (-Math.exp(in.aLog()[vh]) * softplus(g + in.dtBias()[vh * in.keyDim() + i]));
            case LOWER_BOUND -> {
                float x = g + in.dtBias()[vh * in.keyDim() + i];
                yield options.lowerBound() * sigmoid(aScale(in, vh) * x);
            }
        };
    }

    /** {@code ∂decay/∂x} with {@code x = g + dt_bias}. */
    private static float gateSlope(KdaInputs in, KdaOptions options, int vh, float x) {
        return switch (options.gate()) {
            case NONE -> 1f;
            case SOFTPLUS -> (float) (-Math.exp(in.aLog()[vh]) * sigmoid(x));
            case LOWER_BOUND -> {
                float a = aScale(in, vh);
                float sig = sigmoid(a * x);
                yield options.lowerBound() * sig * (1f - sig) * a;
            }
        };
    }

    /** {@code ∂decay/∂A_log}. */
    private static double gateALogSlope(KdaInputs in, KdaOptions options, int vh, float x, float decay) {
        if (options.gate() == KdaOptions.Gate.SOFTPLUS) {
            return decay; // decay = −exp(A_log)·softplus(x), so its A_log-derivative is itself
        }
        float a = aScale(in, vh);
        float sig = sigmoid(a * x);
        return (double) options.lowerBound() * sig * (1f - sig) * a * x;
    }

    private static float aScale(KdaInputs in, int vh) {
        return in.aLog() == null ? 1f : (float) Math.exp(in.aLog()[vh]);
    }

    /** Row {@code row} of {@code raw [T·H,K]}, normalised (with norms) and scaled, into {@code out[at …+dim]}. */
    private static void prepareQk(float[] raw, int row, float[] out, int at, float[] norms, int dim, float scale) {
        int base = row * dim;
        float factor = scale;
        if (norms != null) {
            double sumSq = 0;
            for (int i = 0; i < dim; i++) {
                sumSq += (double) raw[base + i] * raw[base + i];
            }
            float norm = (float) Math.sqrt(sumSq + KdaOptions.L2NORM_EPS);
            norms[row] = norm;
            factor = scale / norm;
        }
        for (int i = 0; i < dim; i++) {
            out[at + i] = raw[base + i] * factor;
        }
    }

    /**
     * Backward of {@code out = scale · x / ‖x‖} for row {@code row} of {@code dRaw [T·H,K]}, given the prepared
     * row at {@code prepared[at …]}: {@code dx = scale · (dy − y (y·dy)) / ‖x‖} with y the unit vector.
     */
    private static void qkBackward(float[] dPrepared, float[] dRaw, int row, float[] prepared, int at, float[] norms,
                                   int dim, float scale) {
        int base = row * dim;
        if (norms == null) {
            for (int i = 0; i < dim; i++) {
                dRaw[base + i] = dPrepared[i] * scale;
            }
            return;
        }
        // With prepared = scale·y the gradient of y is dy = scale·dPrepared, and y·dy = prepared·dPrepared.
        double dot = 0;
        for (int i = 0; i < dim; i++) {
            dot += (double) prepared[at + i] * dPrepared[i];
        }
        float norm = norms[row];
        float yTimesDot = (float) (dot / scale);
        for (int i = 0; i < dim; i++) {
            dRaw[base + i] = (scale * dPrepared[i] - prepared[at + i] * yTimesDot) / norm;
        }
    }

    /** {@code log(1 + exp(x))} without overflow: the exponent is always ≤ 0. */
    static double softplus(double x) {
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

    /** {@code 1 / (1 + exp(−x))} with the exponent always ≤ 0. */
    static float sigmoid(double x) {
        if (x >= 0) {
            return (float) (1.0 / (1.0 + Math.exp(-x)));
        }
        double e = Math.exp(x);
        return (float) (e / (1.0 + e));
    }
}
