package io.kdapack.core.optim;

/**
 * Which parameters get weight decay, decided by name. No decay for:
 * <ul>
 *   <li>biases: the last name component is {@code bias};</li>
 *   <li>norm gains: any name component ends in {@code norm} ({@code input_layernorm}, {@code post_attention_layernorm},
 *       {@code o_norm}, {@code q_a_layernorm}, {@code kv_a_layernorm}, {@code enorm}, {@code hnorm}, {@code model.norm});</li>
 *   <li>the KDA gate parameters {@code A_log} and {@code dt_bias} (last name component).</li>
 * </ul>
 * Everything else (projections, embeddings, the LM head, convolution weights) decays. For the model's Hugging Face
 * names this coincides with Megatron's default rule (no decay for biases and 1-D tensors): every excluded tensor is
 * 1-D and every decayed one is at least 2-D.
 */
public final class WeightDecayRule {

    private WeightDecayRule() {
    }

    /** True when the parameter called {@code name} gets weight decay. */
    public static boolean appliesTo(String name) {
        String[] parts = name.split("\\.");
        String last = parts[parts.length - 1];
        if (last.equals("bias") || last.equals("A_log") || last.equals("dt_bias")) {
            return false;
        }
        for (String part : parts) {
            if (part.endsWith("norm")) {
                return false;
            }
        }
        return true;
    }
}
