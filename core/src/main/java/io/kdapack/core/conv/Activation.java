package io.kdapack.core.conv;

import io.kdapack.core.linalg.ExpKernels;

/** Activation applied after the short convolution: none, or SiLU {@code z · sigmoid(z)}. */
public enum Activation {
    NONE, SILU;

    /** The activation named {@code name} as in the golden files ({@code "none"}, {@code "silu"}). */
    public static Activation parse(String name) {
        return switch (name) {
            case "none" -> NONE;
            case "silu" -> SILU;
            default -> throw new IllegalArgumentException("activation must be \"silu\" or \"none\", got \"" + name + "\"");
        };
    }

    /** {@code y[yOffset + d] = act(z[d])} for {@code d < length}, vectorised. */
    void apply(float[] z, float[] y, int yOffset, int length) {
        if (this == SILU) {
            ExpKernels.silu(z, 0, y, yOffset, length);
        } else {
            System.arraycopy(z, 0, y, yOffset, length);
        }
    }

    /**
     * {@code dz[offset + d] = dy[offset + d] · act'(z[d])} for {@code d < length}, vectorised; for SiLU
     * {@code act'(z) = σ(z)·(1 + z·(1 − σ(z)))}.
     */
    void backward(float[] z, float[] dy, float[] dz, int offset, int length) {
        if (this == SILU) {
            ExpKernels.siluBackward(z, 0, dy, offset, dz, offset, length);
        } else {
            System.arraycopy(dy, offset, dz, offset, length);
        }
    }
}
