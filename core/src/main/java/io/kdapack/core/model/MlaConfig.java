package io.kdapack.core.model;

/**
 * The full-attention layers in DeepSeek-V2 MLA form ({@code model.mla}).
 *
 * @param numHeads      attention heads
 * @param qLoraRank     rank of the low-rank query projection; {@code null}: queries are projected directly
 * @param kvLoraRank    rank of the compressed key/value latent
 * @param qkNopeHeadDim per-head query/key dimension without RoPE
 * @param qkRopeHeadDim per-head query/key dimension with RoPE (the key part is shared by all heads)
 * @param vHeadDim      per-head value dimension
 * @param ropeTheta     RoPE base
 */
public record MlaConfig(int numHeads, Integer qLoraRank, int kvLoraRank, int qkNopeHeadDim, int qkRopeHeadDim,
                        int vHeadDim, double ropeTheta) {

    public static MlaConfig defaults() {
        return new MlaConfig(2, null, 32, 16, 8, 16, 10000.0);
    }
}
