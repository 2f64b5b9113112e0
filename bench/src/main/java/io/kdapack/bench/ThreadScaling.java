package io.kdapack.bench;

import io.kdapack.core.linalg.VectorWidth;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * What {@code threads} threads can gain over one on this machine at best, measured beside the step they bound: the
 * speedup on work that never leaves the registers ({@code fma}: fused multiply-adds on 16 independent
 * vector chains, the FMA units' throughput) and on work that only moves memory ({@code copy}: each thread copying an
 * array of {@value #COPY_FLOATS} floats, 32 MiB, far past its caches). A step's {@code thread_speedup} lies between the
 * two, by the share of its time that is bound by memory; on a VM both also show how much of its second core the host
 * gives it.
 *
 * <p>Each side runs the same work on one thread and on all of them at once (each thread doing what the one did), in
 * turns for {@value #ROUNDS} rounds; the speedup is {@code threads · best one-thread time / best all-thread time}.
 * Memory: {@code 2 × 32 MiB} per thread, allocated for the measurement and dropped after it.
 */
public final class ThreadScaling {

    static final int ROUNDS = 5;
    static final int COPY_FLOATS = 8 << 20;
    /** Steps of the FMA loop per run: about 10 ms on one core of a current x86 CPU. */
    private static final long FMA_STEPS = 4_000_000L;
    private static final int WARM_UP_RUNS = 50;
    private static final long WARM_UP_STEPS = 5_000L;
    private static final int COPIES = 4;
    /** The kernels' species: the FMA rate they can reach. */
    private static final VectorSpecies<Float> SPECIES = VectorWidth.SPECIES;

    /** Keeps the FMA results alive, so that the JIT cannot drop the loop. */
    private static volatile float sink;

    private ThreadScaling() {
    }

    /**
     * Measures both speedups of {@code threads} threads over one.
     *
     * @return {@code fma} and {@code copy}, in that order; both 1 for one thread (nothing is measured)
     */
    public static Map<String, Double> measure(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        Map<String, Double> out = new LinkedHashMap<>();
        if (threads == 1) {
            out.put("fma", 1.0);
            out.put("copy", 1.0);
            return out;
        }
        float[][] from = new float[threads][COPY_FLOATS];
        float[][] to = new float[threads][COPY_FLOATS];
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            // Short runs first, so that the JIT compiles the vector loop before it runs long (interpreted, each vector
            // operation allocates: seconds).
            for (int i = 0; i < WARM_UP_RUNS; i++) {
                fma(WARM_UP_STEPS);
            }
            out.put("fma", speedup(pool, threads, worker -> fma(FMA_STEPS)));
            out.put("copy", speedup(pool, threads, worker -> {
                for (int c = 0; c < COPIES; c++) {
                    System.arraycopy(from[worker], 0, to[worker], 0, COPY_FLOATS);
                }
            }));
        } finally {
            pool.shutdownNow();
        }
        return out;
    }

    /** {@code threads · best(one) / best(all)} over the rounds, one worker and all of them taking turns. */
    private static double speedup(ExecutorService pool, int threads, Work work) {
        long one = Long.MAX_VALUE;
        long all = Long.MAX_VALUE;
        run(pool, 1, work); // warm-up: compiles the loop, touches the arrays
        run(pool, threads, work);
        for (int r = 0; r < ROUNDS; r++) {
            one = Math.min(one, run(pool, 1, work));
            all = Math.min(all, run(pool, threads, work));
        }
        return threads * (double) one / all;
    }

    /** Wall time of {@code workers} running {@code work} at once, in ns. */
    private static long run(ExecutorService pool, int workers, Work work) {
        Future<?>[] running = new Future<?>[workers];
        long start = System.nanoTime();
        for (int w = 0; w < workers; w++) {
            int worker = w;
            running[w] = pool.submit(() -> work.run(worker));
        }
        try {
            for (Future<?> f : running) {
                f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while measuring thread scaling", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("thread-scaling probe failed", e.getCause());
        }
        return System.nanoTime() - start;
    }

    /**
     * {@code steps} steps of 16 independent chains {@code c = c·m + a} (more than an FMA unit's latency
     * times its count, so that throughput binds), converging to {@code a / (1 − m)}: no overflow, no subnormals.
     */
    private static void fma(long steps) {
        FloatVector m = FloatVector.broadcast(SPECIES, 0.9999f);
        FloatVector a = FloatVector.broadcast(SPECIES, 1e-7f);
        FloatVector c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a;
        FloatVector c8 = a, c9 = a, c10 = a, c11 = a, c12 = a, c13 = a, c14 = a, c15 = a;
        for (long i = 0; i < steps; i++) {
            c0 = c0.fma(m, a);
            c1 = c1.fma(m, a);
            c2 = c2.fma(m, a);
            c3 = c3.fma(m, a);
            c4 = c4.fma(m, a);
            c5 = c5.fma(m, a);
            c6 = c6.fma(m, a);
            c7 = c7.fma(m, a);
            c8 = c8.fma(m, a);
            c9 = c9.fma(m, a);
            c10 = c10.fma(m, a);
            c11 = c11.fma(m, a);
            c12 = c12.fma(m, a);
            c13 = c13.fma(m, a);
            c14 = c14.fma(m, a);
            c15 = c15.fma(m, a);
        }
        sink = c0.add(c1).add(c2).add(c3).add(c4).add(c5).add(c6).add(c7).add(c8).add(c9).add(c10).add(c11)
                .add(c12).add(c13).add(c14).add(c15).reduceLanes(VectorOperators.ADD);
    }

    @FunctionalInterface
    private interface Work {
        void run(int worker);
    }
}
