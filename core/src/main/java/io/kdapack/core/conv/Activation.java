package io.kdapack.core.conv;

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

    /** {@code act(z)}. */
    float apply(float z) {
        return this == SILU ? z * sigmoid(z) : z;
    }

    /** {@code act'(z)}; for SiLU {@code σ(z)·(1 + z·(1 − σ(z)))}. */
    float derivative(float z) {
        if (this == NONE) {
            return 1f;
        }
        float s = sigmoid(z);
        return s * (1f + z * (1f - s));
    }

    private static float sigmoid(float z) {
        return (float) (1.0 / (1.0 + Math.exp(-z)));
    }
}
