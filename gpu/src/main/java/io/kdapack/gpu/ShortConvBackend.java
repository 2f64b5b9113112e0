package io.kdapack.gpu;

import io.kdapack.core.conv.ShortConvGradients;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.conv.ShortConvOutputs;

/**
 * An implementation of the short convolution with the contract of {@link io.kdapack.core.conv.ShortConv} (the
 * CPU op): {@link CudaConvBackend} on the GPU.
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
