package io.kdapack.core.model;

/**
 * The hybrid KDA model ({@code model}). Layer i is full attention (MLA) when
 * {@code (i + 1) % fullAttentionInterval == 0}, KDA otherwise.
 *
 * @param vocabSize             vocabulary size V
 * @param hiddenSize            model width
 * @param numLayers             decoder layers
 * @param fullAttentionInterval every this many layers one is full attention
 * @param intermediateSize      SwiGLU MLP inner width
 * @param rmsNormEps            epsilon of the RMSNorms
 * @param tieWordEmbeddings     the LM head shares the embedding matrix
 * @param tokenizer             how text becomes token ids: {@code null} (bytes, the default) or the path of a Hugging
 *                              Face {@code tokenizer.json}
 */
public record ModelConfig(int vocabSize, int hiddenSize, int numLayers, int fullAttentionInterval, int intermediateSize,
                          double rmsNormEps, boolean tieWordEmbeddings, KdaConfig kda, MlaConfig mla, MtpConfig mtp,
                          String tokenizer) {

    /** A tiny model for the demo task (vocabulary 132: 64 keys, 64 values, QUERY, EOD, PAD, NONE): 3 KDA + 1 MLA layers. */
    public static ModelConfig defaults() {
        return new ModelConfig(132, 64, 4, 4, 176, 1e-6, false, KdaConfig.defaults(), MlaConfig.defaults(),
                MtpConfig.defaults(), null);
    }

    /** True when layer {@code layer} (0-based) is a full-attention layer. */
    public boolean isFullAttention(int layer) {
        if (layer < 0 || layer >= numLayers) {
            throw new IllegalArgumentException("layer " + layer + " outside [0, " + numLayers + ")");
        }
        return (layer + 1) % fullAttentionInterval == 0;
    }
}
