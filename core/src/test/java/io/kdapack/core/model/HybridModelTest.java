package io.kdapack.core.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.LanguageModel.LossWeights;
import io.kdapack.core.model.LanguageModel.Output;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.nn.Parameter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.Test;

class HybridModelTest {
    private static final LossWeights WEIGHTS = new LossWeights(0.03, 0.004);

    @Test
    void namesEveryWeightAsHuggingFaceAndFla() {
        HybridModel model = new HybridModel(TinyModels.config(), new KdaChunked(1), true);
        List<String> names = model.parameters().stream().map(Parameter::name).toList();
        List<String> expected = new ArrayList<>(List.of("model.embed_tokens.weight",
                "model.layers.0.input_layernorm.weight"));
        for (String kda : List.of("q_proj.weight", "k_proj.weight", "v_proj.weight", "q_conv1d.weight",
                "k_conv1d.weight", "v_conv1d.weight", "f_proj.0.weight", "f_proj.1.weight", "b_proj.weight", "A_log",
                "dt_bias", "g_proj.0.weight", "g_proj.1.weight", "g_proj.1.bias", "o_norm.weight", "o_proj.weight")) {
            expected.add("model.layers.0.self_attn." + kda);
        }
        expected.addAll(mlpAndNorm("model.layers.0"));
        expected.add("model.layers.1.input_layernorm.weight");
        expected.addAll(mla("model.layers.1.self_attn"));
        expected.addAll(mlpAndNorm("model.layers.1"));
        expected.addAll(List.of("model.norm.weight", "lm_head.weight", "model.mtp.0.enorm.weight",
                "model.mtp.0.hnorm.weight", "model.mtp.0.eh_proj.weight", "model.mtp.0.layer.input_layernorm.weight"));
        expected.addAll(mla("model.mtp.0.layer.self_attn"));
        expected.addAll(mlpAndNorm("model.mtp.0.layer"));
        expected.add("model.mtp.0.norm.weight");
        assertEquals(expected, names);
        Parameter ehProj = model.parameters().stream().filter(p -> p.name().equals("model.mtp.0.eh_proj.weight"))
                .findFirst().orElseThrow();
        assertArrayEquals(new int[] {16, 32}, ehProj.shape());

        HybridModel tiedNoMtp = new HybridModel(TinyModels.config(null, true, 0), new KdaChunked(1), true);
        List<String> tiedNames = tiedNoMtp.parameters().stream().map(Parameter::name).toList();
        assertTrue(!tiedNames.contains("lm_head.weight") && tiedNames.stream().noneMatch(n -> n.startsWith("model.mtp")));
        assertEquals(0, tiedNoMtp.mtpDepth());
    }

    private static List<String> mla(String prefix) {
        return List.of("q_a_proj.weight", "q_a_layernorm.weight", "q_b_proj.weight", "kv_a_proj_with_mqa.weight",
                "kv_a_layernorm.weight", "kv_b_proj.weight", "o_proj.weight").stream().map(n -> prefix + "." + n).toList();
    }

    private static List<String> mlpAndNorm(String prefix) {
        return List.of("post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                "mlp.down_proj.weight").stream().map(n -> prefix + "." + n).toList();
    }

    @Test
    void initialisationIsDeterministicAndFollowsTheRules() {
        HybridModel a = new HybridModel(TinyModels.config(), new KdaChunked(1), true);
        HybridModel b = new HybridModel(TinyModels.config(), new KdaChunked(1), true);
        a.initialize(42);
        b.initialize(42);
        for (int i = 0; i < a.parameters().size(); i++) {
            assertArrayEquals(a.parameters().get(i).values(), b.parameters().get(i).values());
        }
        b.initialize(43);
        assertNotEquals(a.parameters().get(0).values()[0], b.parameters().get(0).values()[0]);
        for (Parameter p : a.parameters()) {
            float[] v = p.values();
            String name = p.name();
            for (float x : v) {
                if (name.endsWith("norm.weight")) {
                    assertEquals(1f, x, name);
                } else if (name.endsWith(".bias")) {
                    assertEquals(0f, x, name);
                } else if (name.endsWith("A_log")) {
                    assertTrue(x >= 0 && x <= Math.log(16), name + " = " + x);
                } else if (name.endsWith("dt_bias")) {
                    double dt = Math.log1p(Math.exp(x)); // softplus(dt_bias) is the time step
                    assertTrue(dt >= 1e-3 * (1 - 1e-5) && dt <= 0.1 * (1 + 1e-5), name + ": softplus = " + dt);
                } else if (name.endsWith("conv1d.weight")) {
                    assertTrue(Math.abs(x) <= 0.5, name + " = " + x); // 1/√W with W = 4
                }
            }
            if (name.endsWith("proj.weight") || name.endsWith("embed_tokens.weight")) {
                double sumSquares = 0;
                for (float x : v) {
                    sumSquares += x * x;
                }
                double std = Math.sqrt(sumSquares / v.length);
                assertTrue(std > 0.012 && std < 0.03, name + ": std " + std);
            }
        }
    }

    /** Same weights and batch → bitwise the same losses and gradients with 1 or 3 threads everywhere. */
    @Test
    void bitwiseIdenticalWhateverTheThreadCount() throws Exception {
        MicroBatch batch = TinyModels.packed(31, 32, new int[] {20, 9}, new int[] {32}, new int[] {3, 17, 1, 8})
                .batch();
        Result one = runIn(1, batch);
        Result three = runIn(3, batch);
        assertArrayEquals(one.output.perTokenLoss(), three.output.perTokenLoss());
        assertArrayEquals(one.output.mtpPerTokenLoss(), three.output.mtpPerTokenLoss());
        assertEquals(one.output.lossSum(), three.output.lossSum());
        assertEquals(one.output.mtpLossSum(), three.output.mtpLossSum());
        for (int i = 0; i < one.grads.size(); i++) {
            assertArrayEquals(one.grads.get(i), three.grads.get(i), "gradient " + i);
        }
    }

    private record Result(Output output, List<float[]> grads) {
    }

    private static Result runIn(int threads, MicroBatch batch) throws Exception {
        HybridModel model = TinyModels.model(TinyModels.config(), true, 9, threads);
        ForkJoinPool pool = new ForkJoinPool(threads);
        try {
            Output out = pool.submit(() -> model.run(batch, WEIGHTS)).get();
            return new Result(out, TinyModels.grads(model));
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void forwardOnlyLeavesGradientsAlone() {
        HybridModel model = TinyModels.model(TinyModels.config(null, false, 0), true, 4, 1);
        TinyModels.zeroGrads(model);
        Output out = model.run(TinyModels.packed(5, 10, new int[] {4, 6}).batch(), null);
        assertNull(out.mtpPerTokenLoss());
        assertTrue(out.lossSum() > 0 && out.lossCount() == 8, out.toString());
        model.parameters().forEach(p -> {
            for (float g : p.grads()) {
                assertEquals(0f, g, p.name());
            }
        });
    }

    @Test
    void mtpNeedsRolledTargets() {
        HybridModel model = TinyModels.model(TinyModels.config(), true, 4, 1);
        MicroBatch b = TinyModels.packed(5, 6, new int[] {6}).batch();
        MicroBatch withoutMtp = new MicroBatch(1, 6, b.tokens(), b.labels(), b.lossMask(), b.positionIds(),
                b.segmentIds(), null, null);
        var e = assertThrows(IllegalArgumentException.class, () -> model.run(withoutMtp, null));
        assertTrue(e.getMessage().contains("mtpLabels"), e.getMessage());
    }

    @Test
    void weightsRoundTripAndMismatchesAreNamed() throws Exception {
        ModelConfig config = TinyModels.config();
        HybridModel source = TinyModels.model(config, true, 6, 1);
        MicroBatch batch = TinyModels.packed(7, 12, new int[] {5, 7}).batch();
        SafeTensors weights = SafeTensors.parse("weights", source.weights().toBytes());

        HybridModel copy = new HybridModel(config, new KdaChunked(1), true);
        copy.load(weights);
        assertArrayEquals(source.run(batch, null).perTokenLoss(), copy.run(batch, null).perTokenLoss());

        SafeTensors.Builder missing = SafeTensors.builder();
        SafeTensors.Builder extra = SafeTensors.builder().put(Tensor.of("model.layers.9.bogus", new float[1], 1));
        SafeTensors.Builder misShaped = SafeTensors.builder();
        for (Tensor t : weights.tensors().values()) {
            extra.put(t);
            if (!t.name().equals("model.norm.weight")) {
                missing.put(t);
            }
            misShaped.put(t.name().equals("model.layers.0.self_attn.A_log") ? Tensor.of(t.name(), new float[3], 3)
                    : t.name().equals("model.norm.weight") ? Tensor.of(t.name(), new long[16], 16) : t);
        }
        float before = copy.parameters().get(0).values()[0];
        assertMismatch(copy, missing.build(), "1 missing [model.norm.weight]");
        assertMismatch(copy, extra.build(), "1 unexpected [model.layers.9.bogus]");
        assertMismatch(copy, misShaped.build(), "2 wrong shape or dtype [model.layers.0.self_attn.A_log [3] (expected [2]), "
                + "model.norm.weight of dtype I64 (expected a float dtype)]");
        assertEquals(before, copy.parameters().get(0).values()[0], "a failed load changes nothing");
    }

    private static void assertMismatch(HybridModel model, SafeTensors file, String expected) {
        var e = assertThrows(IllegalArgumentException.class, () -> model.load(file));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
