package io.kdapack.core.model;

import io.kdapack.core.nn.Parameter;
import java.util.List;
import java.util.Random;

/**
 * Deterministic initialisation from a seed: one {@link Random} consumed by the parameters in model order, each
 * filled by the rule its name selects.
 *
 * <ul>
 *   <li>{@code *norm.weight} (every RMSNorm gain: {@code input_layernorm, post_attention_layernorm, o_norm,
 *       q_a_layernorm, kv_a_layernorm, enorm, hnorm, norm}): ones;</li>
 *   <li>{@code *.bias} ({@code g_proj.1.bias}): zeros;</li>
 *   <li>{@code A_log}: {@code log(u)}, {@code u ~ uniform(1, 16)} per value head (FLA);</li>
 *   <li>{@code dt_bias}: FLA's (Mamba's) inverse softplus of a log-uniform step: {@code dt = exp(u)},
 *       {@code u ~ uniform(log 0.001, log 0.1)}, {@code dt ← max(dt, 1e-4)}, {@code dt_bias = dt + log(1 − exp(−dt))},
 *       so that {@code softplus(dt_bias) = dt ∈ [0.001, 0.1]};</li>
 *   <li>{@code *conv1d.weight} {@code [D,1,W]}: PyTorch's {@code Conv1d} default, {@code uniform(−1/√W, 1/√W)}
 *       (fan-in W of a depthwise kernel);</li>
 *   <li>everything else (projections, embeddings, LM head): normal with mean 0 and std {@link #STD} = 0.02.</li>
 * </ul>
 */
public final class ModelInit {
    /** Standard deviation of the projection weights (Hugging Face {@code initializer_range}). */
    public static final double STD = 0.02;

    private ModelInit() {
    }

    /** Fills every parameter from {@code seed} and clears the gradients. */
    public static void initialize(List<Parameter> parameters, long seed) {
        Random random = new Random(seed);
        for (Parameter p : parameters) {
            float[] v = p.values();
            String name = p.name();
            if (name.endsWith("norm.weight")) {
                java.util.Arrays.fill(v, 1f);
            } else if (name.endsWith(".bias")) {
                java.util.Arrays.fill(v, 0f);
            } else if (name.endsWith("A_log")) {
                for (int i = 0; i < v.length; i++) {
                    v[i] = (float) Math.log(1 + 15 * random.nextDouble());
                }
            } else if (name.endsWith("dt_bias")) {
                for (int i = 0; i < v.length; i++) {
                    double dt = Math.exp(Math.log(0.001) + random.nextDouble() * (Math.log(0.1) - Math.log(0.001)));
                    dt = Math.max(dt, 1e-4);
                    v[i] = (float) (dt + Math.log(-Math.expm1(-dt)));
                }
            } else if (name.endsWith("conv1d.weight")) {
                int[] shape = p.shape();
                double bound = 1 / Math.sqrt(shape[shape.length - 1]);
                for (int i = 0; i < v.length; i++) {
                    v[i] = (float) ((2 * random.nextDouble() - 1) * bound);
                }
            } else {
                p.initNormal(random, STD);
            }
            p.zeroGrad();
        }
    }
}
