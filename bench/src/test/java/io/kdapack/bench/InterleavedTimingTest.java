package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class InterleavedTimingTest {

    @Test
    void actionsTakeTurnsAndEachGetsItsOwnMedian() {
        List<String> order = new ArrayList<>();
        double[] medians = InterleavedTiming.medians(1, 3, () -> order.add("a"), () -> order.add("b"));
        assertEquals(List.of("a", "b", "a", "b", "b", "a", "a", "b"), order, "warm-up in order, then balanced rounds");
        assertEquals(2, medians.length);
        for (double m : medians) {
            assertTrue(m >= 0 && m < 1, "median " + m);
        }
    }

    @Test
    void overAFullCycleEveryActionFollowsEveryOtherEquallyOften() {
        for (int n = 1; n <= 7; n++) {
            int[][] orders = InterleavedTiming.balancedOrders(n);
            assertEquals(n % 2 == 0 ? n : 2 * n, orders.length, "rows for " + n);
            int[][] follows = new int[n][n];
            for (int[] order : orders) {
                assertArrayEquals(IntStream.range(0, n).toArray(), IntStream.of(order).sorted().toArray(),
                        "each round runs every action once: " + Arrays.toString(order));
                for (int i = 1; i < n; i++) {
                    follows[order[i - 1]][order[i]]++;
                }
            }
            for (int a = 0; a < n; a++) {
                for (int b = 0; b < n; b++) {
                    assertEquals(a == b ? 0 : orders.length / n, follows[a][b], n + " actions: " + b + " after " + a);
                }
            }
        }
    }

    @Test
    void slowerActionHasTheLargerMedian() {
        double[] medians = InterleavedTiming.medians(0, 3, () -> { }, () -> sleep(20));
        assertTrue(medians[1] > medians[0] && medians[1] >= 0.015, medians[0] + " vs " + medians[1]);
    }

    @Test
    void aThreadThatSleepsSpendsNoCpuTimeAndOneThatSpinsDoes() {
        InterleavedTiming.Medians m = InterleavedTiming.measure(0, 0, 3, () -> sleep(20), () -> spin(20));
        assertTrue(m.wallSeconds()[0] >= 0.015, "sleep's wall time " + m.wallSeconds()[0]);
        assertTrue(m.cpuSeconds()[1] > m.cpuSeconds()[0] && m.cpuSeconds()[0] < m.wallSeconds()[0] / 2,
                "cpu " + m.cpuSeconds()[0] + " (sleep) vs " + m.cpuSeconds()[1] + " (spin)");
    }

    @Test
    void warmUpGoesOnUntilItsSecondsHavePassed() {
        List<String> order = new ArrayList<>();
        long start = System.nanoTime();
        InterleavedTiming.medians(1, 0.1, 1, () -> {
            order.add("a");
            sleep(10);
        });
        assertTrue((System.nanoTime() - start) * 1e-9 >= 0.1, "the warm-up ended before its 0.1 s");
        // A sleep never ends early, so no more than ten 10 ms warm-up rounds (one more for the timer's rounding),
        // then the one timed run; fewer where the sleeps ran long.
        assertTrue(order.size() >= 2 && order.size() <= 12, "runs " + order.size());
        var e = assertThrows(IllegalArgumentException.class,
                () -> InterleavedTiming.medians(0, -1, 1, () -> { }));
        assertTrue(e.getMessage().contains("warm-up seconds") && e.getMessage().contains("-1"), e.getMessage());
    }

    @Test
    void rejectsNoRepeats() {
        var e = assertThrows(IllegalArgumentException.class, () -> InterleavedTiming.medians(0, 0, () -> { }));
        assertTrue(e.getMessage().contains("repeats"), e.getMessage());
        assertArrayEquals(new double[0], InterleavedTiming.medians(0, 1));
    }

    private static void spin(long ms) {
        long end = System.nanoTime() + ms * 1_000_000;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
