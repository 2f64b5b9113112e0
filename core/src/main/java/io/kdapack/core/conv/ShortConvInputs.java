package io.kdapack.core.conv;

import io.kdapack.core.kda.Segments;

/**
 * Inputs of the depthwise causal short convolution over a flattened token axis of {@code T} positions
 * holding {@code N} sequences. Letters: {@code D} channels, {@code W} kernel width. Arrays are row-major
 * float32 and are not copied. Every argument is checked here, so the op itself never meets bad shapes.
 *
 * @param segments     where the sequences are; positions covered by no sequence are padding
 * @param channels     D ≥ 1
 * @param width        W ≥ 1
 * @param x            {@code [T,D]} input
 * @param weight       {@code [D,W]} depthwise kernel; {@code weight[d, W−1]} multiplies the current token
 * @param bias         {@code [D]} or null
 * @param initialState {@code [N,D,W]} previous W inputs of each sequence, most recent last, or null for zeros
 * @param activation   SiLU or none
 */
public record ShortConvInputs(Segments segments, int channels, int width, float[] x, float[] weight,
                              float[] bias, float[] initialState, Activation activation) {

    public ShortConvInputs {
        if (segments == null) {
            throw new IllegalArgumentException("segments must not be null");
        }
        if (activation == null) {
            throw new IllegalArgumentException("activation must not be null");
        }
        if (channels < 1) {
            throw new IllegalArgumentException("channels D must be >= 1, got " + channels);
        }
        if (width < 1) {
            throw new IllegalArgumentException("width W must be >= 1, got " + width);
        }
        int t = segments.tokens();
        checkLength("x", x, (long) t * channels, "[T,D] = [" + t + "," + channels + "]");
        checkLength("weight", weight, (long) channels * width, "[D,W] = [" + channels + "," + width + "]");
        if (bias != null) {
            checkLength("bias", bias, channels, "[D] = [" + channels + "]");
        }
        if (initialState != null) {
            int n = segments.count();
            checkLength("initialState", initialState, (long) n * channels * width,
                    "[N,D,W] = [" + n + "," + channels + "," + width + "]");
        }
    }

    /** Number of positions T, padding included. */
    public int tokens() {
        return segments.tokens();
    }

    /** Number of sequences N. */
    public int sequences() {
        return segments.count();
    }

    static void checkLength(String name, float[] values, long expected, String shape) {
        if (values == null) {
            throw new IllegalArgumentException(name + " must not be null (shape " + shape + ")");
        }
        if (values.length != expected) {
            throw new IllegalArgumentException(name + " has " + values.length + " values, expected " + expected
                    + " for shape " + shape);
        }
    }
}
