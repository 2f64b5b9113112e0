package io.kdapack.core.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.core.optim.OptimizerConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

class TrainingOptimizerTest {
    private static final OptimizerConfig CONFIG = new OptimizerConfig(1e-2, 1e-3, 2, 0.1, 0.9, 0.95, 1e-8, 1.0);

    private static TestParameter parameter() {
        return TestParameter.of("w.weight", new float[] {0.5f, -0.5f}, new float[2]);
    }

    private static void setGrads(TestParameter p, float a, float b) {
        p.grads()[0] = a;
        p.grads()[1] = b;
    }

    @Test
    void followsTheScheduleClipsAndZeroesGradients() {
        TrainingOptimizer optimizer = new TrainingOptimizer(CONFIG, 6);
        TestParameter p = parameter();
        // Warmup over updates 0..2 (0, lr/2, lr), then cosine over (s − 2) / (6 − 2).
        double[] expectedLr = {0, 5e-3, 1e-2, 1e-3 + 9e-3 * 0.5 * (1 + Math.cos(Math.PI / 4)), 5.5e-3,
            1e-3 + 9e-3 * 0.5 * (1 + Math.cos(3 * Math.PI / 4))};
        for (int s = 0; s < 6; s++) {
            setGrads(p, 3f, 4f);
            TrainingOptimizer.StepStats stats = optimizer.step(List.of(p));
            assertEquals(s + 1, stats.step());
            assertEquals(expectedLr[s], stats.lr(), 1e-15, "lr of update " + (s + 1));
            assertEquals(5.0, stats.gradNorm(), "norm before clipping");
            assertArrayEquals(new float[2], p.grads(), "gradients are zeroed after the step");
        }
        // The first update has lr 0 (Megatron's warmup starts at 0) and leaves the weights unchanged.
        TestParameter q = parameter();
        setGrads(q, 3f, 4f);
        new TrainingOptimizer(CONFIG, 6).step(List.of(q));
        assertArrayEquals(new float[] {0.5f, -0.5f}, q.values());
    }

    @Test
    void restoredOptimizerContinuesBitIdentically() {
        TrainingOptimizer straight = new TrainingOptimizer(CONFIG, 6);
        TrainingOptimizer first = new TrainingOptimizer(CONFIG, 6);
        TestParameter a = parameter();
        TestParameter b = parameter();
        for (int s = 0; s < 3; s++) {
            setGrads(a, 0.3f * s, -0.2f);
            setGrads(b, 0.3f * s, -0.2f);
            straight.step(List.of(a));
            first.step(List.of(b));
        }
        TrainingOptimizer resumed = TrainingOptimizer.restore(CONFIG, 6, first.state());
        for (int s = 3; s < 6; s++) {
            setGrads(a, 0.3f * s, -0.2f);
            setGrads(b, 0.3f * s, -0.2f);
            straight.step(List.of(a));
            resumed.step(List.of(b));
        }
        assertArrayEquals(a.values(), b.values());
    }

    @Test
    void nonFiniteGradientsStopBeforeAnyUpdate() {
        TrainingOptimizer optimizer = new TrainingOptimizer(CONFIG, 6);
        TestParameter p = parameter();
        setGrads(p, Float.POSITIVE_INFINITY, 1f);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> optimizer.step(List.of(p)));
        assertEquals("gradient norm is Infinity at step 1; the weights were not updated", e.getMessage());
        assertArrayEquals(new float[] {0.5f, -0.5f}, p.values());
        assertEquals(0, optimizer.steps());
    }
}
