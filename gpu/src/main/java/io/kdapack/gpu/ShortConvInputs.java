package io.kdapack.gpu;

import io.kdapack.core.kda.Segments;

/**
 * Inputs of the depthwise causal short convolution (DESIGN §2) over a flattened token axis.
 *
 * @param segments     where the sequences are; the convolution never reads across a boundary
 * @param channels     D
 * @param width        W (kernel width, ≤ 8 on CUDA)
 * @param x            {@code [T,D]}
 * @param weight       {@code [D,W]}, {@code weight[d, W−1]} multiplies the current token
 * @param bias         {@code [D]} or null
 * @param initialState {@code [N,D,W]} previous inputs per sequence, most recent last, or null for zeros
 * @param silu         SiLU activation, else none
 */
public record ShortConvInputs(Segments segments, int channels, int width, float[] x, float[] weight, float[] bias,
                              float[] initialState, boolean silu) {

    /** Largest W the kernels take ({@code CONV_MAX_W}). */
    public static final int MAX_WIDTH = 8;

    public ShortConvInputs {
        if (channels < 1 || width < 1 || width > MAX_WIDTH) {
            throw new IllegalArgumentException("need D >= 1 and W in [1, " + MAX_WIDTH + "], got D=" + channels
                    + " W=" + width);
        }
        long t = segments.tokens();
        KdaShapes.require("x", x, t * channels);
        KdaShapes.require("weight", weight, (long) channels * width);
        if (bias != null) {
            KdaShapes.require("bias", bias, channels);
        }
        if (initialState != null) {
            KdaShapes.require("initialState", initialState, (long) segments.count() * channels * width);
        }
    }
}
