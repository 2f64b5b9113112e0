package io.kdapack.bench;

import java.util.Arrays;

/**
 * Median wall times of several actions measured in turn, run by run, so that a change in the machine's speed
 * (other processes, a neighbour on the host) touches all of them alike and their ratios stay meaningful.
 */
public final class InterleavedTiming {

    private InterleavedTiming() {
    }

    /**
     * Runs every action {@code warmUp} times, then {@code repeats} rounds of one run each, in order.
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
        if (warmUp < 0 || repeats < 1) {
            throw new IllegalArgumentException("warm-up must be >= 0 and repeats >= 1, got " + warmUp + ", " + repeats);
        }
        if (!(warmUpSeconds >= 0) || Double.isInfinite(warmUpSeconds)) {
            throw new IllegalArgumentException("warm-up seconds must be finite and >= 0, got " + warmUpSeconds);
        }
        long start = System.nanoTime();
        for (int i = 0; i < warmUp || (System.nanoTime() - start) * 1e-9 < warmUpSeconds; i++) {
            for (Runnable action : actions) {
                action.run();
            }
        }
        double[][] seconds = new double[actions.length][repeats];
        for (int i = 0; i < repeats; i++) {
            for (int a = 0; a < actions.length; a++) {
                long t0 = System.nanoTime();
                actions[a].run();
                seconds[a][i] = (System.nanoTime() - t0) * 1e-9;
            }
        }
        double[] medians = new double[actions.length];
        for (int a = 0; a < actions.length; a++) {
            medians[a] = median(seconds[a]);
        }
        return medians;
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
