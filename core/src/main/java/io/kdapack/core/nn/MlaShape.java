package io.kdapack.core.nn;

/**
 * Shape of a Multi-head Latent Attention layer (DeepSeek-V2 / Ling 3 {@code config.json} names in brackets).
 *
 * @param hidden         d [hidden_size]
 * @param heads          H [num_attention_heads]
 * @param qLoraRank      [q_lora_rank] rank of the low-rank query path, or null for a full {@code q_proj}
 * @param kvLoraRank     [kv_lora_rank] rank of the compressed key/value latent
 * @param qkNopeHeadDim  [qk_nope_head_dim] per-head query/key part without position
 * @param qkRopeHeadDim  [qk_rope_head_dim] decoupled rotary part (even), shared by all heads on the key side
 * @param vHeadDim       [v_head_dim]
 * @param ropeTheta      [rope_theta]
 * @param latentNormEps  eps of {@code q_a_layernorm} and {@code kv_a_layernorm}; Hugging Face's DeepSeek-V2/V3 code
 *                       builds them with the RMSNorm default 1e-6, not with {@code rms_norm_eps}
 *
 * <p>No rope scaling: the softmax scale is exactly {@code 1/sqrt(P+R)} (DeepSeek's YaRN {@code mscale} correction
 * is not applied).
 */
public record MlaShape(int hidden, int heads, Integer qLoraRank, int kvLoraRank, int qkNopeHeadDim,
                       int qkRopeHeadDim, int vHeadDim, double ropeTheta, float latentNormEps) {

    /** eps of {@code DeepseekV2RMSNorm}'s default, used for {@code q_a_layernorm} and {@code kv_a_layernorm}. */
    public static final float DEEPSEEK_LATENT_NORM_EPS = 1e-6f;

    public MlaShape {
        positive("hidden_size", hidden);
        positive("num_heads", heads);
        if (qLoraRank != null) {
            positive("q_lora_rank", qLoraRank);
        }
        positive("kv_lora_rank", kvLoraRank);
        positive("qk_nope_head_dim", qkNopeHeadDim);
        if (qkRopeHeadDim < 2 || qkRopeHeadDim % 2 != 0) {
            throw new IllegalArgumentException("qk_rope_head_dim must be even and >= 2, got " + qkRopeHeadDim);
        }
        positive("v_head_dim", vHeadDim);
        if (!(ropeTheta > 0)) {
            throw new IllegalArgumentException("rope_theta must be > 0, got " + ropeTheta);
        }
        if (!(latentNormEps > 0)) {
            throw new IllegalArgumentException("latent norm eps must be > 0, got " + latentNormEps);
        }
    }

    /**
     * The MLA layers of a model configuration; the latent norms use eps 1e-6 as Hugging Face's DeepSeek-V2 code
     * does, whatever {@code rms_norm_eps} is.
     */
    public static MlaShape of(io.kdapack.core.model.ModelConfig model) {
        io.kdapack.core.model.MlaConfig mla = model.mla();
        return new MlaShape(model.hiddenSize(), mla.numHeads(), mla.qLoraRank(), mla.kvLoraRank(), mla.qkNopeHeadDim(),
                mla.qkRopeHeadDim(), mla.vHeadDim(), mla.ropeTheta(), DEEPSEEK_LATENT_NORM_EPS);
    }

    /** Per-head query/key width {@code qk_nope_head_dim + qk_rope_head_dim}. */
    public int qkHeadDim() {
        return qkNopeHeadDim + qkRopeHeadDim;
    }

    /** Softmax scale {@code 1 / sqrt(qk_nope_head_dim + qk_rope_head_dim)}. */
    public float softmaxScale() {
        return (float) (1.0 / Math.sqrt(qkHeadDim()));
    }

    private static void positive(String key, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(key + " must be >= 1, got " + value);
        }
    }
}
