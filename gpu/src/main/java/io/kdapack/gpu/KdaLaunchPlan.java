package io.kdapack.gpu;

/**
 * Launch geometry and buffer sizes of the KDA kernels (kda.cu) for one problem; plain arithmetic so that it
 * is unit-tested without a GPU. Letters as architecture §2: T tokens, N sequences, C chunks, H, HV, K, V.
 */
public record KdaLaunchPlan(int tokens, int sequences, int chunks, int heads, int valueHeads, int keyDim, int valueDim) {

    /** Largest K: the prep/gate/qk kernels give one thread of a 128-thread block to each key channel. */
    public static final int MAX_KEY_DIM = 128;
    /** Value columns per CTA of the state sweeps and the output kernel ({@code KDA_BV}). */
    public static final int VALUE_BLOCK = 32;
    /** Rows of a sub-block ({@code KDA_SUB}). */
    public static final int SUB = 16;

    public KdaLaunchPlan {
        if (keyDim < 1 || keyDim > MAX_KEY_DIM) {
            throw new IllegalArgumentException("K must be in [1, " + MAX_KEY_DIM + "] for the CUDA kernels, got " + keyDim);
        }
        if (valueDim < 1) {
            throw new IllegalArgumentException("V must be >= 1, got " + valueDim);
        }
        if (heads < 1 || valueHeads < heads || valueHeads % heads != 0) {
            throw new IllegalArgumentException("HV must be a positive multiple of H, got H=" + heads + " HV=" + valueHeads);
        }
        if (tokens < 0 || sequences < 0 || chunks < 0) {
            throw new IllegalArgumentException("negative size: T=" + tokens + " N=" + sequences + " C=" + chunks);
        }
    }

    public static KdaLaunchPlan of(ChunkTable table, int tokens, int heads, int valueHeads, int keyDim, int valueDim) {
        return new KdaLaunchPlan(tokens, table.sequences(), table.count(), heads, valueHeads, keyDim, valueDim);
    }

    public int valueBlocks() {
        return (valueDim + VALUE_BLOCK - 1) / VALUE_BLOCK;
    }

    /** kda_fwd_prep: one CTA per (chunk, hv). */
    public Launch prep() {
        return Launch.of(chunks, valueHeads, 1, 128);
    }

    /** kda_fwd_intra: staged sub-block operands (3·16·K) plus A_kk and its inverse (2·64·64) floats. */
    public Launch intra() {
        return new Launch(chunks, valueHeads, 1, 256, 4 * (3 * SUB * keyDim + 2 * ChunkTable.CHUNK * ChunkTable.CHUNK));
    }

    /** kda_fwd_state and kda_bwd_state: one CTA per (sequence, hv, 32 value columns). */
    public Launch stateSweep() {
        return Launch.of(sequences, valueHeads, valueBlocks(), 256);
    }

    /** kda_fwd_output: one CTA per (chunk, hv, 32 value columns). */
    public Launch output() {
        return Launch.of(chunks, valueHeads, valueBlocks(), 256);
    }

    /** kda_bwd_intra: Linv, dLinv/dA and Linv^T dLinv (3·64·64) plus K floats. */
    public Launch backwardIntra() {
        return new Launch(chunks, valueHeads, 1, 256, 4 * (3 * ChunkTable.CHUNK * ChunkTable.CHUNK + keyDim));
    }

    /** kda_bwd_gate: one CTA per (chunk, hv). */
    public Launch backwardGate() {
        return Launch.of(chunks, valueHeads, 1, 128);
    }

    /** kda_bwd_params: one CTA per value head. */
    public Launch backwardParams() {
        return Launch.of(valueHeads, 1, 1, 128);
    }

    /** kda_bwd_qk: one CTA per (chunk, q/k head). */
    public Launch backwardQk() {
        return Launch.of(chunks, heads, 1, 128);
    }

    /** Elements of a {@code [T,HV,K]} tensor. */
    public long tokenKeyElements() {
        return (long) tokens * valueHeads * keyDim;
    }

    /** Elements of a {@code [T,HV,V]} tensor. */
    public long tokenValueElements() {
        return (long) tokens * valueHeads * valueDim;
    }

    /** Elements of a {@code [T,HV,64]} chunk-matrix tensor (A_qk, Linv). */
    public long tokenChunkElements() {
        return (long) tokens * valueHeads * ChunkTable.CHUNK;
    }

    /** Elements of the per-chunk states {@code [C,HV,K,V]}. */
    public long chunkStateElements() {
        return (long) chunks * valueHeads * keyDim * valueDim;
    }

    /** Elements of per-sequence states {@code [N,HV,K,V]}. */
    public long stateElements() {
        return (long) sequences * valueHeads * keyDim * valueDim;
    }

    /**
     * Device bytes of the forward scratch: qhat, khat, W (fp32 [T,HV,K]), Γ (fp64 [T,HV,K]), betah, Aqk, Linv,
     * U, V' and the chunk states.
     */
    public long forwardScratchBytes() {
        return 4 * (3 * tokenKeyElements() + (long) tokens * valueHeads + 2 * tokenChunkElements()
                + 2 * tokenValueElements() + chunkStateElements()) + 8 * tokenKeyElements();
    }

    /** Device bytes the backward adds: dS per chunk, dV', six chunk-local scratch tensors, dqhat, dkhat, dΓ, dβ. */
    public long backwardScratchBytes() {
        return 4 * (chunkStateElements() + 2 * tokenValueElements() + 7 * tokenKeyElements() + tokenChunkElements()
                + 2L * tokens * valueHeads);
    }
}
