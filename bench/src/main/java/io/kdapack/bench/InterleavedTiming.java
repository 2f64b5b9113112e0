package io.kdapack.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Median wall times of several actions measured in turn, run by run, so that a change in the machine's speed
 * (other processes, a neighbour on the host) touches all of them alike and their ratios stay meaningful.
 *
 * <p>An action also runs faster or slower for what ran just before it: what that left in the caches, whether the
 * pool's workers were still awake. On the CPU VM of 2026-12-06 the KDA training call ran 7.5 % slower after the call
 * of the per-call preprocessing than after itself, and in a fixed order {@code bench kda} timed the same call
 * 1.07–1.11× slower as the "packed" action than as the "unpacked" one (docs/kda.md). So the timed rounds follow a
 * carry-over balanced order ({@link #balancedOrders}): over each full cycle of its rows, every action follows every
 * other action equally often.
 */
public final class InterleavedTiming {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private InterleavedTiming() {
    }

    /**
     * Runs every action {@code warmUp} times, in order, then {@code repeats} rounds of one run each, in the orders of
     * {@link #balancedOrders} (a multiple of their number balances the rounds fully).
     *
     * @return the median seconds of each action, in the order given
     */
    public static double[] medians(int warmUp, int repeats, Runnable... actions) {
        return medians(warmUp, 0, repeats, actions);
    }

    /**
     * Like {@link #medians(int, int, Runnable...)}, with warm-up rounds going on past {@code warmUp} until
     * {@code warmUpSeconds} have passed since the first: enough rounds for the JIT to finish whatever an action costs.
     */
    public static double[] medians(int warmUp, double warmUpSeconds, int repeats, Runnable... actions) {
        return measure(warmUp, warmUpSeconds, repeats, actions).wallSeconds();
    }

    /**
     * Median wall times and median CPU times, both in seconds, per action in the order given. An action's CPU time is
     * what every live Java thread of the process (the caller and the pools it uses; not the JIT's or the collector's
     * threads) spent while it ran. It is steadier than the wall time on a shared host, and it does not count a thread
     * that waits for work, so the two differ where the work is unevenly spread; a thread that ends during a run
     * takes its time along.
     */
    public record Medians(double[] wallSeconds, double[] cpuSeconds) {
    }

    /** Runs the actions as {@link #medians(int, double, int, Runnable...)} does, timing their CPU time too. */
    public static Medians measure(int warmUp, double warmUpSeconds, int repeats, Runnable... actions) {
        if (warmUp < 0 || repeats < 1) {
            throw new IllegalArgumentException("warm-up must be >= 0 and repeats >= 1, got " + warmUp + ", " + repeats);
        }
        requireWarmUpSeconds(warmUpSeconds);
        long start = System.nanoTime();
        for (int i = 0; i < warmUp || (System.nanoTime() - start) * 1e-9 < warmUpSeconds; i++) {
            for (Runnable action : actions) {
                action.run();
            }
        }
        double[][] wall = new double[actions.length][repeats];
        double[][] cpu = new double[actions.length][repeats];
        int[][] orders = balancedOrders(actions.length);
        for (int i = 0; i < repeats; i++) {
            for (int a : orders[i % orders.length]) {
                Map<Long, Long> cpu0 = threadCpuNanos();
                long t0 = System.nanoTime();
                actions[a].run();
                wall[a][i] = (System.nanoTime() - t0) * 1e-9;
                cpu[a][i] = cpuSince(cpu0) * 1e-9;
            }
        }
        double[] wallMedians = new double[actions.length];
        double[] cpuMedians = new double[actions.length];
        for (int a = 0; a < actions.length; a++) {
            wallMedians[a] = median(wall[a]);
            cpuMedians[a] = median(cpu[a]);
        }
        return new Medians(wallMedians, cpuMedians);
    }

    /**
     * The orders of the rounds for {@code n} actions: a Williams design, the Latin square in which every action
     * immediately follows every other exactly once over its {@code n} rows (for odd {@code n} that square and its rows
     * reversed, {@code 2n} rows, each ordered pair twice). Row {@code r} is {@code r + c_j mod n} for
     * {@code c = 0, 1, n−1, 2, n−2, …}.
     */
    static int[][] balancedOrders(int n) {
        int[] columns = new int[n];
        for (int j = 1; j < n; j++) {
            columns[j] = j % 2 == 1 ? (j + 1) / 2 : n - j / 2;
        }
        int[][] orders = new int[n == 0 ? 1 : n % 2 == 0 ? n : 2 * n][n]; // no actions: one empty round
        for (int r = 0; r < n; r++) {
            for (int j = 0; j < n; j++) {
                orders[r][j] = (r + columns[j]) % n;
                if (n % 2 == 1) {
                    orders[n + r][n - 1 - j] = orders[r][j];
                }
            }
        }
        return orders;
    }

    /** Refuses warm-up seconds that are negative, NaN or infinite, naming the value. */
    static void requireWarmUpSeconds(double warmUpSeconds) {
        if (!(warmUpSeconds >= 0) || Double.isInfinite(warmUpSeconds)) {
            throw new IllegalArgumentException("warm-up seconds must be finite and >= 0, got " + warmUpSeconds);
        }
    }

    /** CPU nanoseconds so far of every live thread, by id. */
    private static Map<Long, Long> threadCpuNanos() {
        Map<Long, Long> nanos = new HashMap<>();
        for (long id : THREADS.getAllThreadIds()) {
            long t = THREADS.getThreadCpuTime(id);
            if (t >= 0) {
                nanos.put(id, t);
            }
        }
        return nanos;
    }

    /** CPU nanoseconds the live threads spent since {@code before}; threads started since count from zero. */
    private static long cpuSince(Map<Long, Long> before) {
        long total = 0;
        for (Map.Entry<Long, Long> now : threadCpuNanos().entrySet()) {
            total += Math.max(0, now.getValue() - before.getOrDefault(now.getKey(), 0L));
        }
        return total;
    }

    /** The median of {@code values} (the mean of the middle two for an even count); at least one value. */
    public static double median(double... values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("the median of no values");
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
