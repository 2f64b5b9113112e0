package io.kdapack.core.kda;

import io.kdapack.core.conv.ShortConv;
import io.kdapack.core.conv.ShortConvBackend;

/**
 * A KDA implementation: the CPU chunked kernels, the token-by-token reference, or a GPU backend.
 * Every implementation takes the same inputs and gives the same results within float32 round-off.
 */
public interface KdaBackend {

    /** Short name for logs and benchmarks ({@code "cpu-chunked"}, {@code "cuda"}, …). */
    String name();

    /** The short convolution that runs beside this op (on the same device): the CPU one unless overridden. */
    default ShortConvBackend shortConv() {
        return ShortConv.CPU;
    }

    /** Outputs {@code o [T,HV,V]} (zero at padding) and final states {@code ht [N,HV,K,V]}. */
    KdaResult forward(KdaInputs in, KdaOptions options);

    /**
     * {@link #forward(KdaInputs, KdaOptions)}, with the final states only when {@code finalStates} [FLA's
     * output_final_state]: without them {@code ht} may be null, and a backend may save their work (the CPU chunked
     * one computes the state of a document that ends inside a chunk only when asked). By default they are computed.
     */
    default KdaResult forward(KdaInputs in, KdaOptions options, boolean finalStates) {
        return forward(in, options);
    }

    /**
     * Gradients of {@code L = Σ o·dO + Σ ht·dHt} with respect to every input as stored.
     *
     * @param dO  {@code [T,HV,V]} upstream gradient of o
     * @param dHt {@code [N,HV,K,V]} upstream gradient of the final states, or null for zero
     */
    KdaGradients backward(KdaInputs in, KdaOptions options, float[] dO, float[] dHt);

    /**
     * The forward of a training step: the same result as {@link #forward}, plus what the backward through
     * {@link #backward(KdaTape, float[], float[])} needs. By default nothing is kept and that backward runs
     * {@link #backward(KdaInputs, KdaOptions, float[], float[])}.
     */
    default KdaTape forwardForBackward(KdaInputs in, KdaOptions options) {
        return new KdaTape.Recomputing(in, options, forward(in, options));
    }

    /**
     * {@link #forwardForBackward(KdaInputs, KdaOptions)} with the final states only when {@code finalStates}
     * (see {@link #forward(KdaInputs, KdaOptions, boolean)}): a training step passes false. The backward may still
     * take an upstream gradient of the final states.
     */
    default KdaTape forwardForBackward(KdaInputs in, KdaOptions options, boolean finalStates) {
        return forwardForBackward(in, options);
    }

    /**
     * Gradients as {@link #backward(KdaInputs, KdaOptions, float[], float[])} gives them, for the inputs of a
     * tape this backend recorded; at most once per tape.
     *
     * @throws IllegalStateException when the tape was already used
     */
    default KdaGradients backward(KdaTape tape, float[] dO, float[] dHt) {
        return backward(tape.inputs(), tape.options(), dO, dHt);
    }

    /**
     * @param o  {@code [T,HV,V]}
     * @param ht {@code [N,HV,K,V]}, or null when the final states were not asked for
     */
    record KdaResult(float[] o, float[] ht) {
    }

    /**
     * Gradients, shaped like the inputs; {@code dALog}, {@code dDtBias} and {@code dH0} are null when the
     * corresponding input is null.
     */
    record KdaGradients(float[] dq, float[] dk, float[] dv, float[] dg, float[] dBeta,
                        float[] dALog, float[] dDtBias, float[] dH0) {
    }
}
