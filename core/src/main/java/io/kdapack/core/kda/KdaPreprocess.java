package io.kdapack.core.kda;

/**
 * The in-op preprocessing of DESIGN §2 and its backward: q/k l2 norm, the scale of q, the gate (softplus
 * or lower-bound form) and the beta sigmoid. Only tokens inside a segment are touched; padding keeps
 * zero values and zero gradients. Every {@code exp} sees an argument ≤ 0 except {@code exp(A_log)}, which is
 * a parameter and not a decay.
 */
public final class KdaPreprocess {

    private KdaPreprocess() {
    }

    /**
     * What the recurrence consumes.
     *
     * @param q     {@code [T,H,K]} normalised (with l2norm) and multiplied by the scale
     * @param k     {@code [T,H,K]} normalised (with l2norm)
     * @param decay {@code [T,HV,K]} log-space decay
     * @param beta  {@code [T,HV]} beta in (0,1)
     * @param qNorm {@code [T,H]} {@code sqrt(Σ q² + eps)}, or null without l2norm
     * @param kNorm {@code [T,H]} likewise for k
     * @param scale the scale applied to q
     */
    public record Prepared(float[] q, float[] k, float[] decay, float[] beta, float[] qNorm, float[] kNorm,
                           float scale) {
    }

    /** Gradients with respect to the raw inputs of the gate and beta; {@code dALog}, {@code dDtBias} null when absent. */
    public record RawGradients(float[] dq, float[] dk, float[] dg, float[] dBeta, float[] dALog, float[] dDtBias) {
    }

    /** Applies the preprocessing of {@code options} to validated inputs. */
    public static Prepared forward(KdaInputs in, KdaOptions options) {
        int t = in.tokens();
        int h = in.heads();
        int hv = in.valueHeads();
        int kd = in.keyDim();
        float scale = options.scaleFor(kd);
        float[] q = new float[t * h * kd];
        float[] k = new float[t * h * kd];
        float[] decay = new float[t * hv * kd];
        float[] beta = new float[t * hv];
        float[] qNorm = options.qkL2Norm() ? new float[t * h] : null;
        float[] kNorm = options.qkL2Norm() ? new float[t * h] : null;
        Segments s = in.segments();
        for (int n = 0; n < s.count(); n++) {
            for (int p = s.start(n); p < s.end(n); p++) {
                for (int head = 0; head < h; head++) {
                    int row = p * h + head;
                    prepareQk(in.q(), q, qNorm, row, kd, scale);
                    prepareQk(in.k(), k, kNorm, row, kd, 1f);
                }
                for (int vh = 0; vh < hv; vh++) {
                    int row = p * hv + vh;
                    for (int i = 0; i < kd; i++) {
                        decay[row * kd + i] = decay(in, options, vh, i, in.g()[row * kd + i]);
                    }
                    beta[row] = options.betaSigmoid() ? sigmoid(in.beta()[row]) : in.beta()[row];
                }
            }
        }
        return new Prepared(q, k, decay, beta, qNorm, kNorm, scale);
    }

    /**
     * Maps gradients with respect to the prepared tensors back to the raw inputs. Sums over tokens
     * ({@code dALog}, {@code dDtBias}) run in token order, so results do not depend on threads.
     *
     * @param dq     {@code [T,H,K]} gradient of the prepared (normalised, scaled) q
     * @param dk     {@code [T,H,K]} gradient of the prepared k
     * @param dDecay {@code [T,HV,K]} gradient of the decay
     * @param dBeta  {@code [T,HV]} gradient of beta in (0,1)
     */
    public static RawGradients backward(KdaInputs in, KdaOptions options, Prepared prepared,
                                        float[] dq, float[] dk, float[] dDecay, float[] dBeta) {
        int h = in.heads();
        int hv = in.valueHeads();
        int kd = in.keyDim();
        float[] rawDq = new float[dq.length];
        float[] rawDk = new float[dk.length];
        float[] rawDg = new float[dDecay.length];
        float[] rawDBeta = new float[dBeta.length];
        boolean gateInOp = options.gate() != KdaOptions.Gate.NONE;
        float[] dALog = in.aLog() == null ? null : new float[hv];
        float[] dDtBias = gateInOp ? new float[hv * kd] : null;
        // Sums over tokens in double, in token order: deterministic and free of float drift over long batches.
        double[] dALogSum = new double[hv];
        double[] dDtBiasSum = new double[hv * kd];
        Segments s = in.segments();
        for (int n = 0; n < s.count(); n++) {
            for (int p = s.start(n); p < s.end(n); p++) {
                for (int head = 0; head < h; head++) {
                    int row = p * h + head;
                    qkBackward(dq, rawDq, prepared.q(), prepared.qNorm(), row, kd, prepared.scale());
                    qkBackward(dk, rawDk, prepared.k(), prepared.kNorm(), row, kd, 1f);
                }
                for (int vh = 0; vh < hv; vh++) {
                    int row = p * hv + vh;
                    for (int i = 0; i < kd; i++) {
                        int e = row * kd + i;
                        if (!gateInOp) {
                            rawDg[e] = dDecay[e];
                            continue;
                        }
                        float x = in.g()[e] + in.dtBias()[vh * kd + i];
                        float dx = dDecay[e] * gateSlope(in, options, vh, x);
                        rawDg[e] = dx;
                        dDtBiasSum[vh * kd + i] += dx;
                        if (dALog != null) {
                            dALogSum[vh] += (double) dDecay[e] * gateALogSlope(in, options, vh, x, prepared.decay()[e]);
                        }
                    }
                    float b = prepared.beta()[row];
                    rawDBeta[row] = options.betaSigmoid() ? dBeta[row] * b * (1f - b) : dBeta[row];
                }
            }
        }
        if (dALog != null) {
            for (int vh = 0; vh < hv; vh++) {
                dALog[vh] = (float) dALogSum[vh];
            }
        }
        if (dDtBias != null) {
            for (int i = 0; i < dDtBias.length; i++) {
                dDtBias[i] = (float) dDtBiasSum[i];
            }
        }
        return new RawGradients(rawDq, rawDk, rawDg, rawDBeta, dALog, dDtBias);
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

    private static void prepareQk(float[] raw, float[] out, float[] norms, int row, int dim, float scale) {
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
            out[base + i] = raw[base + i] * factor;
        }
    }

    /** Backward of {@code out = scale · x / ‖x‖}: {@code dx = scale · (dy − y (y·dy)) / ‖x‖} with y the unit vector. */
    private static void qkBackward(float[] dPrepared, float[] dRaw, float[] prepared, float[] norms, int row, int dim,
                                   float scale) {
        int base = row * dim;
        if (norms == null) {
            for (int i = 0; i < dim; i++) {
                dRaw[base + i] = dPrepared[base + i] * scale;
            }
            return;
        }
        // With prepared = scale·y the gradient of y is dy = scale·dPrepared, and y·dy = prepared·dPrepared.
        double dot = 0;
        for (int i = 0; i < dim; i++) {
            dot += (double) prepared[base + i] * dPrepared[base + i];
        }
        float norm = norms[row];
        float yTimesDot = (float) (dot / scale);
        for (int i = 0; i < dim; i++) {
            dRaw[base + i] = (scale * dPrepared[base + i] - prepared[base + i] * yTimesDot) / norm;
        }
    }

    /** {@code log(1 + exp(x))} without overflow: the exponent is always ≤ 0. */
    static double softplus(double x) {
        return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
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
