package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class EmbeddingAndMlpTest {

    @Test
    void embeddingLooksUpAndScattersGradients() {
        Random random = new Random(6);
        Embedding embedding = new Embedding("model.embed_tokens", 5, 3);
        GradCheck.randomize(embedding, random, 1);
        int[] tokens = {4, 0, 4, 2};
        float[] out = embedding.forward(tokens);
        float[] w = embedding.weight().values();
        assertArrayEquals(new float[] {w[12], w[13], w[14]}, java.util.Arrays.copyOfRange(out, 0, 3));
        float[] dy = GradCheck.normal(random, 4 * 3, 1);
        embedding.backward(tokens, dy);
        GradCheck.assertGradient("dweight", embedding.weight().grads(), w,
                () -> GradCheck.dot(embedding.forward(tokens), dy));
        assertEquals(0f, embedding.weight().grads()[3], "row 1 is never looked up");
        assertEquals("model.embed_tokens.weight: token id 7 at position 1 is outside [0, 5)",
                assertThrows(IllegalArgumentException.class, () -> embedding.forward(new int[] {0, 7})).getMessage());
    }

    /**
     * The forward copies rows and the backward sums columns in parallel: bitwise the serial token-order loop for
     * every pool size, rows that many tokens share included (7 ids over 1 000 tokens, a width of 70 that leaves a
     * ragged column block, a gradient that already holds values).
     */
    @Test
    void embeddingIsBitwiseTheSerialLoopForEveryPoolSize() throws Exception {
        Random random = new Random(8);
        int vocab = 7;
        int dim = 70;
        int[] tokens = random.ints(1000, 0, vocab).toArray();
        float[] dy = GradCheck.normal(random, tokens.length * dim, 1);
        float[] initial = GradCheck.normal(random, vocab * dim, 1);
        float[] expected = initial.clone();
        for (int t = 0; t < tokens.length; t++) {
            for (int j = 0; j < dim; j++) {
                expected[tokens[t] * dim + j] += dy[t * dim + j];
            }
        }
        for (int threads : new int[] {1, 2, 3}) {
            Embedding embedding = new Embedding("model.embed_tokens", vocab, dim);
            GradCheck.randomize(embedding, new Random(9), 1);
            System.arraycopy(initial, 0, embedding.weight().grads(), 0, initial.length);
            java.util.concurrent.ForkJoinPool pool = new java.util.concurrent.ForkJoinPool(threads);
            try {
                float[] out = pool.submit(() -> embedding.forward(tokens)).get();
                for (int t = 0; t < tokens.length; t++) {
                    assertArrayEquals(java.util.Arrays.copyOfRange(embedding.weight().values(), tokens[t] * dim,
                            (tokens[t] + 1) * dim), java.util.Arrays.copyOfRange(out, t * dim, (t + 1) * dim));
                }
                pool.submit(() -> embedding.backward(tokens, dy)).get();
            } finally {
                pool.shutdown();
            }
            assertArrayEquals(expected, embedding.weight().grads(), threads + " threads");
        }
    }

    @Test
    void swiGluMatchesFormulaAndGradients() {
        Random random = new Random(7);
        SwiGluMlp mlp = new SwiGluMlp("mlp", 4, 6);
        GradCheck.randomize(mlp, random, 0.5);
        assertEquals(List.of("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"),
                mlp.parameters().stream().map(Parameter::name).toList());
        int tokens = 3;
        float[] x = GradCheck.normal(random, tokens * 4, 1);

        float[] y = mlp.forward(x, tokens).output();
        float[] expected = new float[tokens * 4];
        float[] gw = mlp.parameters().get(0).values();
        float[] uw = mlp.parameters().get(1).values();
        float[] dw = mlp.parameters().get(2).values();
        for (int t = 0; t < tokens; t++) {
            for (int o = 0; o < 4; o++) {
                double s = 0;
                for (int i = 0; i < 6; i++) {
                    double g = 0;
                    double u = 0;
                    for (int j = 0; j < 4; j++) {
                        g += gw[i * 4 + j] * x[t * 4 + j];
                        u += uw[i * 4 + j] * x[t * 4 + j];
                    }
                    s += dw[o * 6 + i] * (g / (1 + Math.exp(-g))) * u;
                }
                expected[t * 4 + o] = (float) s;
            }
        }
        assertTrue(GradCheck.relativeError(y, expected) < 1e-5);

        float[] dy = GradCheck.normal(random, tokens * 4, 1);
        float[] dx = mlp.backward(mlp.forward(x, tokens), dy);
        java.util.function.DoubleSupplier loss = () -> GradCheck.dot(mlp.forward(x, tokens).output(), dy);
        GradCheck.assertGradient("dx", dx, x, loss);
        for (Parameter p : mlp.parameters()) {
            GradCheck.assertGradient(p.name(), p.grads(), p.values(), loss);
        }
    }
}
