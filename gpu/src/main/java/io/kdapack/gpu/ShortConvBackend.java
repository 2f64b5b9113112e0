package io.kdapack.gpu;

/** An implementation of the short convolution (fwd and bwd); {@link CudaConvBackend} on the GPU. */
public interface ShortConvBackend {

    String name();

    /** Output {@code y [T,D]} (zero at padding) and the final conv state {@code [N,D,W]}. */
    Result forward(ShortConvInputs in);

    /**
     * Gradients of {@code L = Σ y·dy}; {@code dBias} and {@code dInitialState} are null when the input is.
     *
     * @param dy {@code [T,D]}
     */
    Gradients backward(ShortConvInputs in, float[] dy);

    record Result(float[] y, float[] finalState) {
    }

    record Gradients(float[] dx, float[] dWeight, float[] dBias, float[] dInitialState) {
    }
}
