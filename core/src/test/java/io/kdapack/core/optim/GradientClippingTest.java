package io.kdapack.core.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class GradientClippingTest {

    private static List<TestParameter> params() {
        return List.of(TestParameter.of("a", new float[2], new float[] {3f, 4f}),
                TestParameter.of("b", new float[1], new float[] {12f}));
    }

    @Test
    void clipsToMaxNormAndReturnsNormBeforeClipping() {
        List<TestParameter> ps = params();
        assertEquals(13.0, GradientClipping.clipByGlobalNorm(ps, 6.5));
        double c = 6.5 / (13 + 1e-6);
        assertArrayEquals(new float[] {(float) (3 * c), (float) (4 * c)}, ps.get(0).grads());
        assertArrayEquals(new float[] {(float) (12 * c)}, ps.get(1).grads());
        assertEquals(6.5, GradientClipping.globalNorm(ps), 1e-6);
    }

    @Test
    void leavesSmallOrUnclippedGradientsAlone() {
        List<TestParameter> ps = params();
        assertEquals(13.0, GradientClipping.clipByGlobalNorm(ps, 20));
        assertEquals(13.0, GradientClipping.clipByGlobalNorm(ps, 0));
        assertArrayEquals(new float[] {3f, 4f}, ps.get(0).grads());
    }

    @Test
    void nonFiniteNormIsReportedNotSpread() {
        List<TestParameter> ps = List.of(TestParameter.of("a", new float[2], new float[] {Float.NaN, 1f}));
        assertEquals(Double.NaN, GradientClipping.clipByGlobalNorm(ps, 1.0));
        assertEquals(1f, ps.get(0).grads()[1]);
        assertThrows(IllegalArgumentException.class, () -> GradientClipping.clipByGlobalNorm(params(), -1));
    }
}
