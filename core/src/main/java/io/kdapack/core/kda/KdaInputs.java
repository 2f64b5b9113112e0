package io.kdapack.core.kda;

/**
 * Inputs of the KDA op over a flattened token axis of {@code T} tokens (packed layout, or {@code [B,T]}
 * flattened to {@code B·T}). Letters as in DESIGN §2: {@code H} q/k heads, {@code HV} value heads
 * ({@code HV % H == 0}), {@code K} key dim, {@code V} value dim, {@code N} sequences. All arrays are
 * row-major float32 and are not copied: callers must not change them while the op runs.
 *
 * @param segments where the sequences are; tokens covered by no segment are padding
 * @param heads    H
 * @param valueHeads HV
 * @param keyDim   K
 * @param valueDim V
 * @param q        {@code [T,H,K]}
 * @param k        {@code [T,H,K]}
 * @param v        {@code [T,HV,V]}
 * @param g        {@code [T,HV,K]} log-space decay, or the raw gate input when the gate is in the op
 * @param beta     {@code [T,HV]} beta in (0,1), or its logit with {@code betaSigmoid}
 * @param aLog     {@code [HV]} or null; only with a gate in the op
 * @param dtBias   {@code [HV·K]} (index {@code hv·K + i}) or null; required with a gate in the op
 * @param h0       {@code [N,HV,K,V]} initial states, or null for zero states
 */
public record KdaInputs(Segments segments, int heads, int valueHeads, int keyDim, int valueDim,
                        float[] q, float[] k, float[] v, float[] g, float[] beta,
                        float[] aLog, float[] dtBias, float[] h0) {

    /** Total number of token positions {@code T} (padding included). */
    public int tokens() {
        return segments.tokens();
    }

    /** Number of sequences {@code N}. */
    public int sequences() {
        return segments.count();
    }
}
