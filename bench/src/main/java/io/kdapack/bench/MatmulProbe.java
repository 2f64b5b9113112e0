package io.kdapack.bench;

import io.kdapack.core.linalg.Gemm;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;

/**
 * A fixed fp32 matrix product to time beside an operation, as the machine's practical ceiling: {@link #run} is
 * {@value #PRODUCTS} products of {@value #SIZE}³ by {@link Gemm#parallelSgemm} on a pool of its own. A benchmark
 * times it interleaved with what it measures and with the same statistic, so that the ratio of the two GFLOP/s
 * figures sees the same machine.
 */
public final class MatmulProbe implements AutoCloseable {

    static final int SIZE = 512;
    static final int PRODUCTS = 8;

    private final ForkJoinPool pool;
    private final float[] a = new float[SIZE * SIZE];
    private final float[] b = new float[SIZE * SIZE];
    private final float[] c = new float[SIZE * SIZE];

    /** @param threads worker threads, ≥ 1 */
    public MatmulProbe(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        pool = new ForkJoinPool(threads);
        Random random = new Random(1);
        for (int i = 0; i < a.length; i++) {
            a[i] = random.nextFloat() - 0.5f;
            b[i] = random.nextFloat() - 0.5f;
        }
    }

    /** Runs the products once. */
    public void run() {
        for (int p = 0; p < PRODUCTS; p++) {
            Gemm.parallelSgemm(pool, false, false, SIZE, SIZE, SIZE, 1f, a, 0, SIZE, b, 0, SIZE, 0f, c, 0, SIZE);
        }
    }

    /** Floating-point operations of one {@link #run}. */
    public double flops() {
        return 2.0 * SIZE * SIZE * SIZE * PRODUCTS;
    }

    @Override
    public void close() {
        pool.shutdown();
    }
}
