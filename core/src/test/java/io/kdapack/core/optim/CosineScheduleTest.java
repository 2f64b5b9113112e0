package io.kdapack.core.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class CosineScheduleTest {
    private static final CosineSchedule SCHEDULE = new CosineSchedule(1e-3, 1e-4, 10, 110);

    @Test
    void warmupIsLinearFromZero() {
        assertEquals(0.0, SCHEDULE.lr(0));
        assertEquals(5e-4, SCHEDULE.lr(5), 1e-18);
        assertEquals(1e-3, SCHEDULE.lr(10), 1e-18);
    }

    @Test
    void cosineDecaysToMinLr() {
        assertEquals(1e-4 + 0.9e-3 * 0.5 * (1 + Math.cos(Math.PI / 4)), SCHEDULE.lr(35), 1e-18);
        assertEquals(5.5e-4, SCHEDULE.lr(60), 1e-18);
        assertEquals(1e-4, SCHEDULE.lr(110), 1e-18);
        assertEquals(1e-4, SCHEDULE.lr(1000));
    }

    @Test
    void noWarmupStartsAtMaxLr() {
        assertEquals(2e-3, new CosineSchedule(2e-3, 0, 0, 4).lr(0));
        assertEquals(1e-3, new CosineSchedule(2e-3, 0, 0, 4).lr(2), 1e-18);
    }

    @Test
    void rejectsInconsistentSettings() {
        assertThrows(IllegalArgumentException.class, () -> new CosineSchedule(1e-3, 2e-3, 0, 10));
        assertThrows(IllegalArgumentException.class, () -> new CosineSchedule(1e-3, 0, 10, 10));
        assertThrows(IllegalArgumentException.class, () -> new CosineSchedule(1e-3, 0, -1, 10));
        assertThrows(IllegalArgumentException.class, () -> SCHEDULE.lr(-1));
    }
}
