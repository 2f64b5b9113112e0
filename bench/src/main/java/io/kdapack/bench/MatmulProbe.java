package io.kdapack.bench;

import io.kdapack.core.linalg.Gemm;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;

/**
 * A fixed fp32 matrix product to time beside an operation, as the machine's practical ceiling: {@link #run} is
 * {@value #PRODUCTS} products of {@value #SIZE}³ (other sizes for {@link BlasComparison}) by
 * {@link Gemm#parallelSgemm} on a pool of its own, of two random matrices. A benchmark times it interleaved with what
 * it measures and with the same statistic, so that the ratio of the two GFLOP/s figures sees the same machine.
 */
public final class MatmulProbe implements AutoCloseable {

    static final int SIZE = 512;
    static final int PRODUCTS = 8;

    private final ForkJoinPool pool;
    private final int size;
    private final int products;
    private final float[] a;
    private final float[] b;
    private final float[] c;

    /** @param threads worker threads, ≥ 1 */
    public MatmulProbe(int threads) {
        this(threads, SIZE, PRODUCTS);
    }

    /** {@code products} products of {@code size}³ a {@link #run}. */
    MatmulProbe(int threads, int size, int products) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        pool = new ForkJoinPool(threads);
        this.size = size;
        this.products = products;
        a = new float[size * size];
        b = new float[size * size];
        c = new float[size * size];
        Random random = new Random(1);
        for (int i = 0; i < a.length; i++) {
            a[i] = random.nextFloat() - 0.5f;
            b[i] = random.nextFloat() - 0.5f;
        }
    }

    /**
     * Runs the products once, back to back in one task of the pool, as a training step runs its products and as numpy
     * runs its own on OpenBLAS's threads: the workers linger between them ({@link io.kdapack.core.linalg.Team}). Each
     * product submitted from outside the pool instead woke a parked worker, and the probe read 16 % low (median of
     * 54 runs of 8 products of 512³ in turns, docs/kda.md).
     */
    public void run() {
        pool.submit(() -> {
            for (int p = 0; p < products; p++) {
                Gemm.parallelSgemm(pool, false, false, size, size, size, 1f, a, 0, size, b, 0, size, 0f, c, 0, size);
            }
        }).join();
    }

    /** Floating-point operations of one {@link #run}. */
    public double flops() {
        return 2.0 * size * size * size * products;
    }

    @Override
    public void close() {
        pool.shutdown();
    }
}
