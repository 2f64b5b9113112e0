package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.Test;

class BlasComparisonTest {

    @Test
    void readsTheScriptsOutput() {
        BlasComparison.Numpy numpy = BlasComparison.parse(0, "numpy 2.4.6 scipy-openblas 0.3.31\n512 305.0\n1024 346.5");
        assertEquals("numpy 2.4.6 scipy-openblas 0.3.31", numpy.description());
        assertEquals(Map.of("512", 305.0, "1024", 346.5), numpy.gflops());
    }

    @Test
    void saysNotFoundWithoutNumpyOrOnOutputItCannotRead() {
        BlasComparison.Numpy missing = BlasComparison.parse(1,
                "Traceback (most recent call last):\nModuleNotFoundError: No module named 'numpy'");
        assertEquals("not found (python3 has no numpy)", missing.description());
        assertTrue(missing.gflops().isEmpty());
        assertTrue(BlasComparison.parse(0, "numpy 2\n512 fast").description().startsWith("not found (unexpected line"));
        assertTrue(BlasComparison.parse(0, "numpy 2\n512 300").description().startsWith("not found (numpy gave sizes"));
        assertTrue(BlasComparison.parse(2, "boom").description().startsWith("not found (python3 exited 2: boom"));
    }

    @Test
    void timesKdapacksProduct() {
        ForkJoinPool pool = new ForkJoinPool(1);
        try {
            assertTrue(BlasComparison.gemmGflops(pool, 64) > 0);
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void rejectsNoThreads() {
        var e = assertThrows(IllegalArgumentException.class, () -> BlasComparison.measure(0));
        assertTrue(e.getMessage().contains("threads"), e.getMessage());
    }
}
