package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LinearTest {

    @Test
    void forwardMatchesDirectSum() {
        Random random = new Random(1);
        Linear linear = new Linear("proj", 7, 5, true);
        GradCheck.randomize(linear, random, 1);
        float[] x = GradCheck.normal(random, 3 * 7, 1);
        float[] y = linear.forward(x, 3).output();
        float[] expected = new float[3 * 5];
        for (int t = 0; t < 3; t++) {
            for (int o = 0; o < 5; o++) {
                double s = linear.bias().values()[o];
                for (int i = 0; i < 7; i++) {
                    s += (double) x[t * 7 + i] * linear.weight().values()[o * 7 + i];
                }
                expected[t * 5 + o] = (float) s;
            }
        }
        // float32 dot products of 7 terms: round-off ~1e-7 relative.
        assertTrue(GradCheck.relativeError(y, expected) < 1e-6);
    }

    @Test
    void gradientsMatchFiniteDifferences() {
        for (boolean bias : new boolean[] {false, true}) {
            Random random = new Random(2);
            Linear linear = new Linear("proj", 6, 4, bias);
            GradCheck.randomize(linear, random, 0.5);
            int tokens = 5;
            float[] x = GradCheck.normal(random, tokens * 6, 1);
            float[] dy = GradCheck.normal(random, tokens * 4, 1);
            float[] dx = linear.backward(linear.forward(x, tokens), dy);
            for (Parameter p : linear.parameters()) {
                GradCheck.assertGradient(p.name(), p.grads(), p.values(),
                        () -> GradCheck.dot(linear.forward(x, tokens).output(), dy));
            }
            GradCheck.assertGradient("dx", dx, x, () -> GradCheck.dot(linear.forward(x, tokens).output(), dy));
        }
    }

    @Test
    void accumulatesParameterGradientsAcrossCalls() {
        Random random = new Random(3);
        Linear linear = new Linear("proj", 3, 2, true);
        GradCheck.randomize(linear, random, 1);
        float[] x = GradCheck.normal(random, 4 * 3, 1);
        float[] dy = GradCheck.normal(random, 4 * 2, 1);
        linear.backward(linear.forward(x, 4), dy);
        float[] once = linear.weight().grads().clone();
        linear.backward(linear.forward(x, 4), dy);
        for (int i = 0; i < once.length; i++) {
            assertEquals(2 * once[i], linear.weight().grads()[i], 1e-6f * Math.abs(once[i]) + 1e-7f);
        }
    }

    @Test
    void namesParametersAndChecksShapes() {
        Linear linear = new Linear("model.layers.0.self_attn.o_proj", 3, 2, true);
        assertEquals(List.of("model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.bias"),
                linear.parameters().stream().map(Parameter::name).toList());
        // Layers' parameters are what the optimizer and checkpoints take.
        assertEquals(6, io.kdapack.core.optim.NamedParameter.checkedSize(linear.weight()));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> linear.forward(new float[7], 2));
        assertEquals("model.layers.0.self_attn.o_proj.weight input: expected 6 values for shape [2,3], got 7",
                e.getMessage());
    }
}
