package io.kdapack.core.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class AdamWTest {
    private static final AdamWOptions OPTIONS = new AdamWOptions(0.9, 0.999, 1e-8, 0.01);

    @Test
    void twoStepsMatchHandComputedValues() {
        TestParameter w = TestParameter.of("model.layers.0.mlp.up_proj.weight", new float[] {1f}, new float[] {0.5f});
        TestParameter gain = TestParameter.of("model.norm.weight", new float[] {1f}, new float[] {0.5f});
        AdamW adam = new AdamW(OPTIONS);

        adam.step(List.of(w, gain), 0.1);
        // Step 1: m̂ = g, v̂ = g², so p ← p·(1 − 0.1·0.01) − 0.1·0.5/(0.5 + 1e-8) = 0.999 − 0.099999998 = 0.899000002.
        assertEquals(0.899000002f, w.values()[0]);
        // The norm gain has no weight decay: 1 − 0.099999998.
        assertEquals(0.900000002f, gain.values()[0]);

        w.grads()[0] = -0.25f;
        adam.step(List.of(w), 0.1);
        // Step 2: m = 0.9·0.05 − 0.1·0.25 = 0.02, v = 0.999·2.5e-4 + 0.001·0.0625 = 3.1225e-4,
        // p ← 0.899000002·0.999 − (0.1/0.19)·0.02 / (√3.1225e-4/√0.001999 + 1e-8) = 0.871467299.
        // Tolerance 1e-7: the moments are stored in fp32 between steps.
        assertEquals(0.871467299, w.values()[0], 1e-7);
        assertEquals(2, adam.steps());
        // The moments are fp32: within a couple of ulps of the exact values.
        assertArrayEquals(new float[] {0.02f}, adam.state().expAvg().get(w.name()), 4e-9f);
        assertArrayEquals(new float[] {3.1225e-4f}, adam.state().expAvgSq().get(w.name()), 1e-10f);
    }

    @Test
    void restoredStateContinuesBitIdentically() {
        TestParameter a = TestParameter.of("a.weight", new float[] {0.3f, -1.2f, 2f}, new float[] {0.1f, -0.7f, 0.05f});
        TestParameter b = TestParameter.of("a.weight", new float[] {0.3f, -1.2f, 2f}, new float[] {0.1f, -0.7f, 0.05f});
        AdamW uninterrupted = new AdamW(OPTIONS);
        uninterrupted.step(List.of(a), 0.01);
        AdamW first = new AdamW(OPTIONS);
        first.step(List.of(b), 0.01);
        AdamW resumed = AdamW.restore(OPTIONS, first.state());

        uninterrupted.step(List.of(a), 0.02);
        resumed.step(List.of(b), 0.02);
        assertArrayEquals(a.values(), b.values());
        assertEquals(uninterrupted.steps(), resumed.steps());
    }

    @Test
    void rejectsMisuse() {
        AdamW adam = new AdamW(OPTIONS);
        TestParameter p = TestParameter.of("p", new float[2], new float[2]);
        assertThrows(IllegalArgumentException.class, () -> adam.step(List.of(p, p), 0.1));
        assertThrows(IllegalArgumentException.class, () -> adam.step(List.of(p), Double.NaN));
        assertThrows(IllegalArgumentException.class,
                () -> adam.step(List.of(new TestParameter("q", new int[] {3}, new float[2], new float[2])), 0.1));
        adam.step(List.of(p), 0.1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> adam.step(List.of(TestParameter.of("p", new float[3], new float[3])), 0.1));
        assertEquals("parameter 'p': 3 elements, optimizer state has 2", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new AdamWOptions(1.0, 0.9, 1e-8, 0));
        assertThrows(IllegalArgumentException.class, () -> new AdamWOptions(0.9, 0.9, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new AdamWOptions(0.9, 0.9, 1e-8, -1));
    }
}
