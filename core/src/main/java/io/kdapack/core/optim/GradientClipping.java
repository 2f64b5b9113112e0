package io.kdapack.core.optim;

import java.util.List;

/**
 * Global gradient-norm clipping as Megatron's {@code clip_grad_norm_fp32}: the L2 norm over all gradients, and when
 * {@code maxNorm / (norm + 1e-6) < 1} every gradient is multiplied by that coefficient. The norm is summed in double
 * in a fixed order (parameters in list order, elements in index order), on the calling thread, so it is bit-identical
 * across runs and thread counts; the scaling, element by element, runs in parallel blocks in the calling task's
 * fork-join pool.
 */
public final class GradientClipping {
    /** Megatron's guard against division by zero in the clip coefficient. */
    public static final double EPSILON = 1.0e-6;

    private GradientClipping() {
    }

    /** {@code sqrt(Σ g²)} over every gradient element of {@code parameters}. */
    public static double globalNorm(List<? extends NamedParameter> parameters) {
        double sumOfSquares = 0;
        for (NamedParameter p : parameters) {
            NamedParameter.checkedSize(p);
            for (float g : p.grads()) {
                sumOfSquares += (double) g * g;
            }
        }
        return Math.sqrt(sumOfSquares);
    }

    /**
     * Clips the gradients in place to global norm {@code maxNorm}; {@code maxNorm = 0} disables clipping. A
     * non-finite norm leaves the gradients as they are (the caller decides whether to skip the step).
     *
     * @return the norm before clipping
     */
    public static double clipByGlobalNorm(List<? extends NamedParameter> parameters, double maxNorm) {
        if (!(maxNorm >= 0) || !Double.isFinite(maxNorm)) {
            throw new IllegalArgumentException("maxNorm must be a finite number >= 0 (0 = off), got " + maxNorm);
        }
        double norm = globalNorm(parameters);
        double coefficient = maxNorm / (norm + EPSILON);
        if (maxNorm > 0 && coefficient < 1.0) {
            // Element-wise: parallel blocks (the norm above is a reduction and keeps its one fixed order).
            ElementBlocks.forEach(parameters, (p, from, to) -> {
                float[] grads = p.grads();
                for (int i = from; i < to; i++) {
                    grads[i] = (float) (grads[i] * coefficient);
                }
            });
        }
        return norm;
    }
}
