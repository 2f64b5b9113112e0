package io.kdapack.core.conv;

/**
 * Results of the short-convolution forward pass.
 *
 * @param y          {@code [T,D]} output; 0 at padding positions
 * @param finalState {@code [N,D,W]} last W inputs of each sequence, most recent last (left-filled from the
 *                   initial state, or zeros, when the sequence is shorter than W)
 */
public record ShortConvOutputs(float[] y, float[] finalState) {
}
