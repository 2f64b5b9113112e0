package io.kdapack.core.conv;

/**
 * Gradients of the short convolution with respect to its inputs.
 *
 * @param dx            {@code [T,D]}; 0 at padding positions
 * @param dweight       {@code [D,W]}
 * @param dbias         {@code [D]}, or null when the inputs have no bias
 * @param dinitialState {@code [N,D,W]}, or null when the inputs have no initial state; column 0 only
 *                      receives gradient through the final state
 */
public record ShortConvGradients(float[] dx, float[] dweight, float[] dbias, float[] dinitialState) {
}
