package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class NormsTest {

    @Test
    void rmsNormMatchesFormula() {
        RmsNorm norm = new RmsNorm("norm", 4, 1e-6f);
        norm.weight().values()[1] = 2f;
        float[] y = norm.forward(new float[] {1, 2, 3, 4}, 1).output();
        double rms = Math.sqrt((1 + 4 + 9 + 16) / 4.0 + 1e-6);
        float[] expected = {(float) (1 / rms), (float) (2 * 2 / rms), (float) (3 / rms), (float) (4 / rms)};
        assertTrue(GradCheck.relativeError(y, expected) < 1e-6);
    }

    @Test
    void rmsNormGradients() {
        Random random = new Random(4);
        RmsNorm norm = new RmsNorm("norm", 6, 1e-5f);
        GradCheck.randomize(norm, random, 1);
        float[] x = GradCheck.normal(random, 5 * 6, 1);
        float[] dy = GradCheck.normal(random, 5 * 6, 1);
        float[] dx = norm.backward(norm.forward(x, 5), dy);
        GradCheck.assertGradient("dx", dx, x, () -> GradCheck.dot(norm.forward(x, 5).output(), dy));
        GradCheck.assertGradient("dweight", norm.weight().grads(), norm.weight().values(),
                () -> GradCheck.dot(norm.forward(x, 5).output(), dy));
    }

    @Test
    void gatedRmsNormNormalisesEachHeadAndGates() {
        GatedRmsNorm norm = new GatedRmsNorm("o_norm", 2, 2, 1e-6f);
        norm.weight().values()[0] = 3f;
        // head 0 = (3, 4), head 1 = (1, 1); gates 0 (sigmoid ½) and large (sigmoid ≈ 1).
        float[] y = norm.forward(new float[] {3, 4, 1, 1}, new float[] {0, 0, 30, 30}, 1).output();
        double rms0 = Math.sqrt(12.5 + 1e-6);
        double rms1 = Math.sqrt(1 + 1e-6);
        float[] expected = {(float) (3 * 3 / rms0 * 0.5), (float) (4 / rms0 * 0.5), (float) (3 / rms1), (float) (1 / rms1)};
        assertTrue(GradCheck.relativeError(y, expected) < 1e-6);
        assertEquals("o_norm.weight", norm.parameters().get(0).name());
    }

    @Test
    void gatedRmsNormGradients() {
        Random random = new Random(5);
        GatedRmsNorm norm = new GatedRmsNorm("o_norm", 3, 4, 1e-5f);
        GradCheck.randomize(norm, random, 1);
        int tokens = 4;
        float[] x = GradCheck.normal(random, tokens * 12, 1);
        float[] gate = GradCheck.normal(random, tokens * 12, 1);
        float[] dy = GradCheck.normal(random, tokens * 12, 1);
        GatedRmsNorm.Gradients grads = norm.backward(norm.forward(x, gate, tokens), dy);
        java.util.function.DoubleSupplier loss = () -> GradCheck.dot(norm.forward(x, gate, tokens).output(), dy);
        GradCheck.assertGradient("dx", grads.dx(), x, loss);
        GradCheck.assertGradient("dgate", grads.dgate(), gate, loss);
        GradCheck.assertGradient("dweight", norm.weight().grads(), norm.weight().values(), loss);
    }

    @Test
    void rejectsBadArguments() {
        assertEquals("rms norm 'n': eps must be > 0, got 0.0",
                assertThrows(IllegalArgumentException.class, () -> new RmsNorm("n", 4, 0f)).getMessage());
        GatedRmsNorm norm = new GatedRmsNorm("o_norm", 2, 3, 1e-6f);
        assertEquals("o_norm.weight gate: expected 12 values for shape [2,6], got 6",
                assertThrows(IllegalArgumentException.class,
                        () -> norm.forward(new float[12], new float[6], 2)).getMessage());
    }
}
