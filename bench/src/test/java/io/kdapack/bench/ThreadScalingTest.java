package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ThreadScalingTest {

    @Test
    void measuresBothSpeedupsOfTwoThreads() {
        Map<String, Double> s = ThreadScaling.measure(2);
        assertEquals(List.of("fma", "copy"), List.copyOf(s.keySet()));
        // On a loaded machine either may fall below 1 (the second thread waits for a core), never to 0 or past 2 by
        // more than timing noise: each thread does exactly the one thread's work.
        for (double v : s.values()) {
            assertTrue(v > 0 && v < 2.5, s.toString());
        }
    }

    @Test
    void oneThreadIsItsOwnScale() {
        assertEquals(Map.of("fma", 1.0, "copy", 1.0), ThreadScaling.measure(1));
    }

    @Test
    void rejectsNoThreads() {
        var e = assertThrows(IllegalArgumentException.class, () -> ThreadScaling.measure(0));
        assertTrue(e.getMessage().contains("threads must be >= 1, got 0"), e.getMessage());
    }
}
