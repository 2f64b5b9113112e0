package io.kdapack.core.conv;

/**
 * An implementation of the short convolution with the contract of {@link ShortConv}: {@link ShortConv#CPU} on the
 * CPU, the gpu module's on the GPU. A {@link io.kdapack.core.kda.KdaBackend} names the one that goes with it
 * ({@link io.kdapack.core.kda.KdaBackend#shortConv()}), so a model runs its convolutions where it runs its KDA op.
 */
public interface ShortConvBackend {

    String name();

    /** Output {@code y [T,D]} (zero at padding) and the final conv states {@code [N,D,W]}. */
    ShortConvOutputs forward(ShortConvInputs in);

    /**
     * Gradients of {@code L = Σ y·dy + Σ finalState·dFinalState}; {@code dbias} and {@code dinitialState} are null
     * when the input is.
     *
     * @param dy          {@code [T,D]}
     * @param dFinalState {@code [N,D,W]} or null for none
     */
    ShortConvGradients backward(ShortConvInputs in, float[] dy, float[] dFinalState);
}
