package io.kdapack.core.model;

/**
 * The KimiDeltaAttention layers ({@code model.kda}).
 *
 * @param numHeads   query/key heads H
 * @param numVHeads  value heads HV, a multiple of H (grouped value attention)
 * @param headDim    K = V per head
 * @param convSize   width of the short causal convolutions on q, k, v
 * @param lowerBound {@code null}: softplus gate; otherwise the lower bound in [−5, 0) of the sigmoid gate (default
 *                   −0.01: a state keeps at least e^−0.01 of itself per token, so it can neither wipe itself at a
 *                   boundary nor forget a previous document by decay; only isolation resets it — docs/training.md)
 * @param normEps    epsilon of the per-head gated output RMSNorm
 */
public record KdaConfig(int numHeads, int numVHeads, int headDim, int convSize, Double lowerBound, double normEps) {

    public static KdaConfig defaults() {
        return new KdaConfig(2, 2, 32, 4, -0.01, 1e-5);
    }
}
