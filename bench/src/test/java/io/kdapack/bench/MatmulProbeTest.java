package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class MatmulProbeTest {

    @Test
    void countsTheFlopsOfItsProducts() {
        try (MatmulProbe probe = new MatmulProbe(2)) {
            probe.run();
            assertEquals(2.0 * 512 * 512 * 512 * 8, probe.flops());
        }
    }

    @Test
    void rejectsNoThreads() {
        var e = assertThrows(IllegalArgumentException.class, () -> new MatmulProbe(0));
        assertTrue(e.getMessage().contains("threads"), e.getMessage());
    }
}
