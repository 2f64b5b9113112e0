package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.Segments;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

class MlaAttentionTest {
    private static final int HIDDEN = 8;

    private static MlaShape shape(Integer qLoraRank) {
        return new MlaShape(HIDDEN, 2, qLoraRank, 5, 3, 4, 3, 10000, 1e-6f);
    }

    private static MlaAttention randomLayer(Integer qLoraRank, long seed) {
        MlaAttention mla = new MlaAttention("self_attn", shape(qLoraRank));
        Random random = new Random(seed);
        for (Parameter p : mla.parameters()) {
            // Norm weights around 1, projections small enough that the softmax is not saturated.
            if (p.name().endsWith("layernorm.weight")) {
                for (int i = 0; i < p.size(); i++) {
                    p.values()[i] = 1f + (float) (0.2 * random.nextGaussian());
                }
            } else {
                p.initNormal(random, 0.4);
            }
            p.zeroGrad();
        }
        return mla;
    }

    @Test
    void namesParametersAsDeepSeekV2() {
        assertEquals(List.of("self_attn.q_a_proj.weight", "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight",
                        "self_attn.kv_a_proj_with_mqa.weight", "self_attn.kv_a_layernorm.weight",
                        "self_attn.kv_b_proj.weight", "self_attn.o_proj.weight"),
                randomLayer(6, 1).parameters().stream().map(Parameter::name).toList());
        MlaAttention noLora = randomLayer(null, 1);
        assertEquals("self_attn.q_proj.weight", noLora.parameters().get(0).name());
        assertArrayEquals(new int[] {2 * 7, HIDDEN}, noLora.parameters().get(0).shape());
        assertArrayEquals(new int[] {5 + 4, HIDDEN}, noLora.parameters().get(1).shape());
        assertArrayEquals(new int[] {2 * (3 + 3), 5}, noLora.parameters().get(3).shape());
    }

    @Test
    void gradientsMatchFiniteDifferences() {
        for (Integer qLoraRank : new Integer[] {6, null}) {
            MlaAttention mla = randomLayer(qLoraRank, 2);
            Random random = new Random(3);
            // Two documents and padding (tokens 3 and 7); positions restart per document.
            Segments segments = new Segments(8, new int[] {0, 4}, new int[] {3, 7});
            int[] positions = {0, 1, 2, 0, 0, 1, 2, 0};
            float[] x = GradCheck.normal(random, 8 * HIDDEN, 1);
            float[] dy = GradCheck.normal(random, 8 * HIDDEN, 1);
            float[] dx = mla.backward(mla.forward(x, segments, positions), dy);
            DoubleSupplier loss = () -> GradCheck.dot(mla.forward(x, segments, positions).output(), dy);
            GradCheck.assertGradient("dx (q_lora_rank " + qLoraRank + ")", dx, x, loss);
            for (Parameter p : mla.parameters()) {
                GradCheck.assertGradient(p.name() + " (q_lora_rank " + qLoraRank + ")", p.grads(), p.values(), loss);
            }
        }
    }

    /** The mask and the restarted positions make a packed batch equal to its documents run alone. */
    @Test
    void packedBatchEqualsEachDocumentAlone() {
        MlaAttention packedLayer = randomLayer(6, 4);
        Random random = new Random(5);
        int lengthA = 5;
        int lengthB = 7;
        int tokens = 1 + lengthA + 2 + lengthB; // padding, document A, padding ×2, document B
        Segments packed = new Segments(tokens, new int[] {1, 8}, new int[] {6, 15});
        int[] positions = {0, 0, 1, 2, 3, 4, 0, 0, 0, 1, 2, 3, 4, 5, 6};
        float[] x = GradCheck.normal(random, tokens * HIDDEN, 1);
        float[] dy = GradCheck.normal(random, tokens * HIDDEN, 1);
        MlaAttention.Saved saved = packedLayer.forward(x, packed, positions);
        float[] dx = packedLayer.backward(saved, dy);

        float[][] gradSum = new float[packedLayer.parameters().size()][];
        MlaAttention aloneLayer = randomLayer(6, 4);
        for (int[] doc : new int[][] {{1, lengthA}, {8, lengthB}}) {
            int start = doc[0];
            int length = doc[1];
            Segments alone = new Segments(length, new int[] {0}, new int[] {length});
            int[] alonePositions = java.util.stream.IntStream.range(0, length).toArray();
            float[] xAlone = Arrays.copyOfRange(x, start * HIDDEN, (start + length) * HIDDEN);
            float[] dyAlone = Arrays.copyOfRange(dy, start * HIDDEN, (start + length) * HIDDEN);
            for (Parameter p : aloneLayer.parameters()) {
                p.zeroGrad();
            }
            MlaAttention.Saved s = aloneLayer.forward(xAlone, alone, alonePositions);
            float[] dxAlone = aloneLayer.backward(s, dyAlone);
            // Same operations on the same rows: only the accumulation order of matrix products may differ.
            assertClose("y of document at " + start, s.output(),
                    Arrays.copyOfRange(saved.output(), start * HIDDEN, (start + length) * HIDDEN), 1e-6);
            assertClose("dx of document at " + start, dxAlone,
                    Arrays.copyOfRange(dx, start * HIDDEN, (start + length) * HIDDEN), 1e-6);
            List<Parameter> params = aloneLayer.parameters();
            for (int i = 0; i < params.size(); i++) {
                if (gradSum[i] == null) {
                    gradSum[i] = new float[params.get(i).size()];
                }
                for (int j = 0; j < gradSum[i].length; j++) {
                    gradSum[i][j] += params.get(i).grads()[j];
                }
            }
        }
        List<Parameter> params = packedLayer.parameters();
        for (int i = 0; i < params.size(); i++) {
            assertClose(params.get(i).name(), params.get(i).grads(), gradSum[i], 1e-5);
        }
        for (int t : new int[] {0, 6, 7}) {
            for (int j = 0; j < HIDDEN; j++) {
                assertEquals(0f, saved.output()[t * HIDDEN + j], "output of padding token " + t);
                assertEquals(0f, dx[t * HIDDEN + j], "gradient of padding token " + t);
            }
        }
    }

    /**
     * Documents side by side with no padding between them (lengths 5, 7, 1, 3): a mask off by one token at a
     * boundary would let a document's first query see the previous document's last key, which padding between
     * documents hides. Each document's output, input gradient and share of the weight gradients equal its run alone
     * (1e-6 / 1e-5 relative: only the accumulation order of matrix products over tokens differs).
     */
    @Test
    void documentsSideBySideEqualEachDocumentAlone() {
        int[] starts = {0, 5, 12, 13};
        int[] ends = {5, 12, 13, 16};
        int tokens = 16;
        int[] positions = new int[tokens];
        for (int d = 0; d < starts.length; d++) {
            for (int t = starts[d]; t < ends[d]; t++) {
                positions[t] = t - starts[d];
            }
        }
        MlaAttention packedLayer = randomLayer(6, 4);
        Random random = new Random(9);
        float[] x = GradCheck.normal(random, tokens * HIDDEN, 1);
        float[] dy = GradCheck.normal(random, tokens * HIDDEN, 1);
        MlaAttention.Saved saved = packedLayer.forward(x, new Segments(tokens, starts, ends), positions);
        float[] dx = packedLayer.backward(saved, dy);

        MlaAttention aloneLayer = randomLayer(6, 4);
        List<Parameter> aloneParams = aloneLayer.parameters();
        float[][] gradSum = new float[aloneParams.size()][];
        for (int d = 0; d < starts.length; d++) {
            int length = ends[d] - starts[d];
            int from = starts[d] * HIDDEN;
            int to = ends[d] * HIDDEN;
            aloneParams.forEach(Parameter::zeroGrad);
            MlaAttention.Saved alone = aloneLayer.forward(Arrays.copyOfRange(x, from, to),
                    new Segments(length, new int[] {0}, new int[] {length}), Arrays.copyOfRange(positions, starts[d], ends[d]));
            float[] dxAlone = aloneLayer.backward(alone, Arrays.copyOfRange(dy, from, to));
            assertClose("y of document " + d, alone.output(), Arrays.copyOfRange(saved.output(), from, to), 1e-6);
            assertClose("dx of document " + d, dxAlone, Arrays.copyOfRange(dx, from, to), 1e-6);
            for (int i = 0; i < aloneParams.size(); i++) {
                gradSum[i] = gradSum[i] == null ? new float[aloneParams.get(i).size()] : gradSum[i];
                for (int j = 0; j < gradSum[i].length; j++) {
                    gradSum[i][j] += aloneParams.get(i).grads()[j];
                }
            }
        }
        List<Parameter> params = packedLayer.parameters();
        for (int i = 0; i < params.size(); i++) {
            assertClose(params.get(i).name(), params.get(i).grads(), gradSum[i], 1e-5);
        }
    }

    @Test
    void resultsDoNotDependOnThreadCount() throws Exception {
        MlaAttention mla = randomLayer(6, 6);
        Random random = new Random(7);
        int tokens = 300;
        Segments segments = new Segments(tokens, new int[] {0, 140, 141}, new int[] {140, 141, 300});
        int[] positions = new int[tokens];
        for (int n = 0; n < segments.count(); n++) {
            for (int t = segments.start(n); t < segments.end(n); t++) {
                positions[t] = t - segments.start(n);
            }
        }
        float[] x = GradCheck.normal(random, tokens * HIDDEN, 1);
        float[] dy = GradCheck.normal(random, tokens * HIDDEN, 1);
        float[][] one = runIn(new ForkJoinPool(1), mla, x, segments, positions, dy);
        float[][] three = runIn(new ForkJoinPool(3), mla, x, segments, positions, dy);
        for (int i = 0; i < one.length; i++) {
            assertArrayEquals(one[i], three[i], "result " + i);
        }
    }

    @Test
    void shapeComesFromTheModelConfiguration() {
        io.kdapack.core.model.ModelConfig model = io.kdapack.core.model.ModelConfig.defaults();
        MlaShape shape = MlaShape.of(model);
        assertEquals(model.hiddenSize(), shape.hidden());
        assertEquals(model.mla().numHeads(), shape.heads());
        assertEquals(model.mla().qLoraRank(), shape.qLoraRank());
        assertEquals(model.mla().qkNopeHeadDim() + model.mla().qkRopeHeadDim(), shape.qkHeadDim());
        assertEquals(1e-6f, shape.latentNormEps());
    }

    @Test
    void rejectsBadArguments() {
        MlaAttention mla = randomLayer(null, 1);
        Segments segments = new Segments(2, new int[] {0}, new int[] {2});
        assertEquals("positions[1] must be >= 0, got -1", assertThrows(IllegalArgumentException.class,
                () -> mla.forward(new float[2 * HIDDEN], segments, new int[] {0, -1})).getMessage());
        assertEquals("self_attn.input: expected 16 values for shape [2,8], got 8",
                assertThrows(IllegalArgumentException.class,
                        () -> mla.forward(new float[HIDDEN], segments, new int[] {0, 1})).getMessage());
        assertEquals("qk_rope_head_dim must be even and >= 2, got 3", assertThrows(IllegalArgumentException.class,
                () -> new MlaShape(8, 2, null, 5, 3, 3, 3, 10000, 1e-6f)).getMessage());
    }

    /** Output, dx and every parameter gradient, computed inside {@code pool}. */
    private static float[][] runIn(ForkJoinPool pool, MlaAttention mla, float[] x, Segments segments, int[] positions,
                                   float[] dy) throws Exception {
        try {
            return pool.submit(() -> {
                for (Parameter p : mla.parameters()) {
                    p.zeroGrad();
                }
                MlaAttention.Saved saved = mla.forward(x, segments, positions);
                float[] dx = mla.backward(saved, dy);
                List<float[]> results = new java.util.ArrayList<>(List.of(saved.output(), dx));
                for (Parameter p : mla.parameters()) {
                    results.add(p.grads().clone());
                }
                return results.toArray(new float[0][]);
            }).get();
        } finally {
            pool.shutdown();
        }
    }

    private static void assertClose(String name, float[] actual, float[] expected, double tolerance) {
        double err = GradCheck.relativeError(actual, expected);
        assertTrue(err <= tolerance, name + ": relative error " + err);
    }
}
