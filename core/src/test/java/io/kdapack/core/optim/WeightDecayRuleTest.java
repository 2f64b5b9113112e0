package io.kdapack.core.optim;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class WeightDecayRuleTest {

    @Test
    void normsBiasesAndGateParametersAreExempt() {
        for (String name : new String[] {"model.norm.weight", "model.layers.0.input_layernorm.weight",
            "model.layers.0.post_attention_layernorm.weight", "model.layers.0.self_attn.o_norm.weight",
            "model.layers.3.self_attn.q_a_layernorm.weight", "model.layers.3.self_attn.kv_a_layernorm.weight",
            "model.mtp.0.enorm.weight", "model.mtp.0.hnorm.weight", "model.layers.0.self_attn.A_log",
            "model.layers.0.self_attn.dt_bias", "model.layers.0.self_attn.g_proj.1.bias"}) {
            assertFalse(WeightDecayRule.appliesTo(name), name);
        }
    }

    @Test
    void matricesDecay() {
        for (String name : new String[] {"model.embed_tokens.weight", "lm_head.weight",
            "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.f_proj.0.weight",
            "model.layers.0.self_attn.q_conv1d.weight", "model.layers.0.mlp.down_proj.weight",
            "model.mtp.0.eh_proj.weight", "model.layers.3.self_attn.kv_b_proj.weight"}) {
            assertTrue(WeightDecayRule.appliesTo(name), name);
        }
    }
}
