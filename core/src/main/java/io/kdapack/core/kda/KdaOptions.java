package io.kdapack.core.kda;

/**
 * Flags of the KDA op (architecture §2, FLA names in brackets).
 *
 * @param scale          multiplier of q; {@code NaN} means the default {@code K^-0.5}
 * @param qkL2Norm       normalise q and k over K inside the op [use_qk_l2norm_in_kernel]
 * @param gate           how {@code g} becomes the log-space decay [use_gate_in_kernel, lower_bound]
 * @param lowerBound     the lower bound {@code lb ∈ [−5, 0)} of {@link Gate#LOWER_BOUND}; ignored otherwise
 * @param betaSigmoid    {@code beta} is a logit and {@code sigmoid(beta)} is used [use_beta_sigmoid_in_kernel]
 */
public record KdaOptions(float scale, boolean qkL2Norm, Gate gate, float lowerBound, boolean betaSigmoid) {

    /** Epsilon inside the square root of the in-op l2 norm, as FLA. */
    public static final float L2NORM_EPS = 1e-6f;

    /** How the stored {@code g} turns into the decay the recurrence consumes. */
    public enum Gate {
        /** {@code g} already is the log-space decay (≤ 0). */
        NONE,
        /** {@code decay = −exp(A_log[hv]) · softplus(g + dt_bias[hv,k])}. */
        SOFTPLUS,
        /** {@code decay = lb · sigmoid(exp(A_log[hv]) · (g + dt_bias[hv,k]))}, or without A_log {@code lb · sigmoid(g + dt_bias)}. */
        LOWER_BOUND
    }

    public KdaOptions {
        if (gate == null) {
            throw new IllegalArgumentException("gate must not be null");
        }
        if (gate == Gate.LOWER_BOUND && !(lowerBound >= -5f && lowerBound < 0f)) {
            throw new IllegalArgumentException("lowerBound must be in [-5, 0), got " + lowerBound);
        }
        if (!Float.isNaN(scale) && !(scale > 0f && Float.isFinite(scale))) {
            throw new IllegalArgumentException("scale must be a finite number > 0 (or NaN for K^-0.5), got " + scale);
        }
    }

    /** The plain op: default scale, no preprocessing. */
    public static KdaOptions plain() {
        return new KdaOptions(Float.NaN, false, Gate.NONE, 0f, false);
    }

    /** The configuration of the KimiDeltaAttention layer: l2norm, gate and beta sigmoid in the op. */
    public static KdaOptions layer(Gate gate, float lowerBound) {
        return new KdaOptions(Float.NaN, true, gate, lowerBound, true);
    }

    /** The scale actually applied for key dimension {@code k}. */
    public float scaleFor(int k) {
        return Float.isNaN(scale) ? (float) (1.0 / Math.sqrt(k)) : scale;
    }
}
