package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class BlasComparisonTest {

    @Test
    void saysWhyNumpyGaveNoFigure() {
        assertEquals("python3 has no numpy", BlasComparison.reason(1,
                "Traceback (most recent call last):\nModuleNotFoundError: No module named 'numpy'"));
        assertEquals("python3 exited 2: boom", BlasComparison.reason(2, "Traceback\nboom"));
        assertTrue(BlasComparison.reason(137, "").startsWith("python3 was killed: past the 120 s bound"));
        assertEquals("unexpected output from numpy: fast", BlasComparison.reason(null, "fast"));
    }

    @Test
    void givesBothSidesAndTheirRatioOrSaysWhyNot() {
        Map<String, Object> out = BlasComparison.measure(1);
        String blas = (String) out.get("blas");
        if (blas.startsWith("not found")) {
            assertEquals(Map.of("blas", blas), out, "without numpy only the reason: " + out);
            return;
        }
        assertTrue(blas.startsWith("numpy "), blas);
        for (String key : new String[] {"blas_gflops", "gemm_gflops", "matmul_over_blas"}) {
            @SuppressWarnings("unchecked")
            Map<String, Double> bySize = (Map<String, Double>) out.get(key);
            assertEquals(Set.of("512", "1024"), bySize.keySet(), key);
            bySize.values().forEach(v -> assertTrue(v > 0 && Double.isFinite(v), key + " " + v));
        }
    }

    @Test
    void timesKdapacksProduct() {
        try (MatmulProbe product = new MatmulProbe(1, 64, 1)) {
            assertTrue(BlasComparison.gemmGflops(product) > 0);
        }
    }

    @Test
    void rejectsNoThreads() {
        var e = assertThrows(IllegalArgumentException.class, () -> BlasComparison.measure(0));
        assertTrue(e.getMessage().contains("threads"), e.getMessage());
    }
}
