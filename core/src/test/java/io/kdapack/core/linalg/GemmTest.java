package io.kdapack.core.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.Test;

class GemmTest {

    /** fp32 products of length k accumulate ~sqrt(k)·2^-24 relative error; 1e-5 leaves ample room up to k = 600. */
    private static final double TOLERANCE = 1e-5;

    @Test
    void matchesDoubleReferenceAtAwkwardSizesForEveryTransposeAndScaling() {
        Random random = new Random(7);
        int[][] shapes = {{1, 1, 1}, {5, 7, 3}, {6, 16, 256}, {7, 17, 257}, {13, 33, 600}, {97, 45, 31}, {130, 3, 520}};
        for (int[] s : shapes) {
            for (int variant = 0; variant < 4; variant++) {
                boolean ta = (variant & 1) != 0;
                boolean tb = (variant & 2) != 0;
                int m = s[0], n = s[1], k = s[2];
                int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
                int offA = 2, offB = 5, offC = 1;
                float[] a = random(random, offA + (ta ? k : m) * lda);
                float[] b = random(random, offB + (tb ? n : k) * ldb);
                float[] c = random(random, offC + m * ldc);
                float alpha = 0.75f, beta = -0.5f;
                double[] expected = new double[m * n];
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        double sum = 0;
                        for (int p = 0; p < k; p++) {
                            double x = ta ? a[offA + p * lda + i] : a[offA + i * lda + p];
                            double y = tb ? b[offB + j * ldb + p] : b[offB + p * ldb + j];
                            sum += x * y;
                        }
                        expected[i * n + j] = alpha * sum + beta * c[offC + i * ldc + j];
                    }
                }
                Gemm.sgemm(ta, tb, m, n, k, alpha, a, offA, lda, b, offB, ldb, beta, c, offC, ldc);
                double diff = 0, norm = 0;
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        double d = c[offC + i * ldc + j] - expected[i * n + j];
                        diff += d * d;
                        norm += expected[i * n + j] * expected[i * n + j];
                    }
                }
                double rel = Math.sqrt(diff / norm);
                assertTrue(rel < TOLERANCE, "m=" + m + " n=" + n + " k=" + k + " ta=" + ta + " tb=" + tb + " rel=" + rel);
            }
        }
    }

    /**
     * The issue-18 shapes: dimensions of 1, 7, 63, 65 and 513 (every edge of the 8-row and 4-row register tiles and of
     * the 32- and 16-column panels, a row block of {@link Gemm#MC} plus one, k past two packed blocks) and k = 1, for
     * every transpose, n past one column block of {@link Gemm#NC}, against a float64 reference, and the parallel path
     * bitwise equal to the serial one for 1, 2 and 3 threads; n = 192 and 1088 fill whole panels (the latter past a
     * column block); 128 × 1100 splits over columns only (B far larger than A). Each with beta 0.5, and with beta 0
     * over a C of NaN, which the first k block's sums overwrite. Tolerance 1e-5 as above (k ≤ 513).
     */
    @Test
    void matchesDoubleReferenceOnTileEdgesAndIsThreadIndependent() {
        Random random = new Random(18);
        int[][] shapes = {{1, 513, 7}, {513, 1, 63}, {65, 63, 513}, {63, 65, 1}, {513, 65, 7}, {7, 7, 1},
            {65, 513, 65}, {513, 63, 513}, {513, 513, 1}, {9, 1100, 300}, {97, 192, 300}, {13, 1088, 257},
            {128, 1100, 70}};
        ForkJoinPool[] pools = {new ForkJoinPool(1), new ForkJoinPool(2), new ForkJoinPool(3)};
        try {
            for (int[] s : shapes) {
                for (int variant = 0; variant < 8; variant++) {
                    boolean ta = (variant & 1) != 0;
                    boolean tb = (variant & 2) != 0;
                    int m = s[0], n = s[1], k = s[2];
                    int lda = ta ? m : k, ldb = tb ? k : n;
                    float[] a = random(random, (ta ? k : m) * lda);
                    float[] b = random(random, (tb ? n : k) * ldb);
                    float alpha = 1.25f, beta = (variant & 4) != 0 ? 0f : 0.5f;
                    float[] c0 = random(random, m * n);
                    if (beta == 0f) {
                        Arrays.fill(c0, Float.NaN);
                    }
                    double diff = 0, norm = 0;
                    float[] serial = c0.clone();
                    Gemm.sgemm(ta, tb, m, n, k, alpha, a, 0, lda, b, 0, ldb, beta, serial, 0, n);
                    for (int i = 0; i < m; i++) {
                        for (int j = 0; j < n; j++) {
                            double sum = 0;
                            for (int p = 0; p < k; p++) {
                                sum += (double) (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
                            }
                            double expected = alpha * sum + (beta == 0f ? 0 : beta * c0[i * n + j]);
                            diff += (serial[i * n + j] - expected) * (serial[i * n + j] - expected);
                            norm += expected * expected;
                        }
                    }
                    String id = "m=" + m + " n=" + n + " k=" + k + " ta=" + ta + " tb=" + tb + " beta=" + beta;
                    assertTrue(Math.sqrt(diff / norm) < TOLERANCE, id + " rel=" + Math.sqrt(diff / norm));
                    for (ForkJoinPool pool : pools) {
                        float[] parallel = c0.clone();
                        Gemm.parallelSgemm(pool, ta, tb, m, n, k, alpha, a, 0, lda, b, 0, ldb, beta, parallel, 0, n);
                        assertArrayEquals(serial, parallel, id + " threads=" + pool.getParallelism());
                    }
                }
            }
        } finally {
            for (ForkJoinPool pool : pools) {
                pool.shutdown();
            }
        }
    }

    @Test
    void betaZeroIgnoresGarbageInC() {
        float[] a = {1, 2, 3, 4};
        float[] b = {1, 0, 0, 1};
        float[] c = {Float.NaN, Float.NaN, Float.NaN, Float.NaN};
        Gemm.sgemm(false, false, 2, 2, 2, 1f, a, 0, 2, b, 0, 2, 0f, c, 0, 2);
        assertArrayEquals(new float[] {1, 2, 3, 4}, c);
    }

    @Test
    void parallelIsBitwiseEqualToSingleThreadedWhateverTheThreadCount() {
        Random random = new Random(3);
        int m = 203, n = 77, k = 300;
        float[] a = random(random, m * k);
        float[] b = random(random, k * n);
        float[] single = new float[m * n];
        Gemm.sgemm(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, single, 0, n);
        for (int threads : new int[] {1, 2, 3, 5}) {
            ForkJoinPool pool = new ForkJoinPool(threads);
            float[] parallel = new float[m * n];
            Gemm.parallelSgemm(pool, false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, parallel, 0, n);
            pool.shutdown();
            assertArrayEquals(single, parallel, "threads=" + threads);
        }
    }

    /**
     * A long product of a small C (a weight gradient) is split into fewer, squarer tasks than the rows-first split
     * (see {@link Gemm.Split#of}); results stay bitwise those of one thread for every thread count and transpose.
     */
    @Test
    void longProductsOfASmallCSplitSquarerAndKeepTheirBits() {
        Gemm.Split weightGradient = Gemm.Split.of(256, 256, 4096, 2);
        assertEquals(new Gemm.Split(128, 128), weightGradient, "256 x 256 x 4096 on two workers: 2 x 2 blocks");
        Gemm.Split shortProduct = Gemm.Split.of(256, 256, 512, 2);
        assertEquals(256 / 8, shortProduct.rowsPerBlock(), "k 512: rows first, 8 row blocks");
        Random random = new Random(19);
        int[][] shapes = {{256, 256, 4096}, {97, 70, 1100}, {64, 256, 1024}};
        for (int[] s : shapes) {
            int m = s[0], n = s[1], k = s[2];
            for (int variant = 0; variant < 4; variant++) {
                boolean ta = (variant & 1) != 0;
                boolean tb = (variant & 2) != 0;
                int lda = ta ? m : k, ldb = tb ? k : n;
                float[] a = random(random, m * k);
                float[] b = random(random, k * n);
                float[] single = new float[m * n];
                Gemm.sgemm(ta, tb, m, n, k, 1f, a, 0, lda, b, 0, ldb, 0f, single, 0, n);
                for (int threads : new int[] {2, 3, 5}) {
                    ForkJoinPool pool = new ForkJoinPool(threads);
                    float[] parallel = new float[m * n];
                    Gemm.parallelSgemm(pool, ta, tb, m, n, k, 1f, a, 0, lda, b, 0, ldb, 0f, parallel, 0, n);
                    pool.shutdown();
                    assertArrayEquals(single, parallel,
                            "m=" + m + " n=" + n + " k=" + k + " ta=" + ta + " tb=" + tb + " threads=" + threads);
                }
            }
        }
    }

    /** The parallel path packs B once and shares it: transposes, offsets, beta and edge tiles must not matter. */
    @Test
    void parallelMatchesSingleThreadedBitwiseForEveryTransposeWithOffsetsAndBeta() {
        Random random = new Random(4);
        int m = 131, n = 45, k = 530;
        for (int variant = 0; variant < 4; variant++) {
            boolean ta = (variant & 1) != 0;
            boolean tb = (variant & 2) != 0;
            int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
            float[] a = random(random, 3 + (ta ? k : m) * lda);
            float[] b = random(random, 1 + (tb ? n : k) * ldb);
            float[] c = random(random, 2 + m * ldc);
            float[] single = c.clone();
            Gemm.sgemm(ta, tb, m, n, k, 0.5f, a, 3, lda, b, 1, ldb, 0.25f, single, 2, ldc);
            for (int threads : new int[] {2, 3}) {
                ForkJoinPool pool = new ForkJoinPool(threads);
                float[] parallel = c.clone();
                Gemm.parallelSgemm(pool, ta, tb, m, n, k, 0.5f, a, 3, lda, b, 1, ldb, 0.25f, parallel, 2, ldc);
                pool.shutdown();
                assertArrayEquals(single, parallel, "transA=" + ta + " transB=" + tb + " threads=" + threads);
            }
        }
    }

    /**
     * B packed once and used by several products (the LM head's weight, block after block of rows): each product
     * bitwise that of {@link Gemm#sgemm} on the unpacked B, for both transposes of A and B, offsets, beta 0 and not,
     * 1 to 3 threads; a packed B is unusable once closed.
     */
    @Test
    void prePackedBIsBitwiseTheProductThatPacksItself() {
        Random random = new Random(5);
        int n = 1100, k = 300, ldb = k + 3;
        for (boolean tb : new boolean[] {true, false}) {
            int rowsB = tb ? n : k, ld = tb ? ldb : n + 5;
            float[] stored = random(random, 2 + rowsB * ld);
            for (int threads = 1; threads <= 3; threads++) {
                ForkJoinPool pool = new ForkJoinPool(threads);
                try (Gemm.PackedB packed = Gemm.packB(pool, tb, n, k, stored, 2, ld)) {
                    for (int[] rowsAndTa : new int[][] {{256, 0}, {37, 1}, {5, 0}}) {
                        int m = rowsAndTa[0];
                        boolean ta = rowsAndTa[1] == 1;
                        int lda = (ta ? m : k) + 1, ldc = n + 2;
                        float[] a = random(random, 1 + (ta ? k : m) * lda);
                        float[] c = random(random, m * ldc);
                        for (float beta : new float[] {0f, 0.75f}) {
                            float[] expected = c.clone();
                            Gemm.sgemm(ta, tb, m, n, k, 1.5f, a, 1, lda, stored, 2, ld, beta, expected, 0, ldc);
                            float[] actual = c.clone();
                            Gemm.parallelSgemm(pool, ta, m, 1.5f, a, 1, lda, packed, beta, actual, 0, ldc);
                            assertArrayEquals(expected, actual, "transB=" + tb + " m=" + m + " transA=" + ta
                                    + " beta=" + beta + " threads=" + threads);
                        }
                    }
                    packed.close();
                    IllegalStateException e = assertThrows(IllegalStateException.class, () -> Gemm.parallelSgemm(
                            pool, false, 1, 1f, new float[k], 0, k, packed, 0f, new float[n], 0, n));
                    assertTrue(e.getMessage().contains("closed"), e.getMessage());
                } finally {
                    pool.shutdown();
                }
            }
        }
    }

    @Test
    void rejectsArraysTooSmallForTheShape() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Gemm.sgemm(false, false, 4, 4, 4, 1f, new float[15], 0, 4, new float[16], 0, 4, 0f, new float[16], 0, 4));
        assertTrue(e.getMessage().startsWith("a: a 4x4 matrix"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> Gemm.sgemm(false, false, 4, 4, 4, 1f, new float[16], 0, 3, new float[16], 0, 4, 0f, new float[16], 0, 4));
        assertEquals("lda must be >= 4, got 3", e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Gemm.sgemm(false, false, -1, 4, 4, 1f, new float[16], 0, 4, new float[16], 0, 4, 0f, new float[16], 0, 4));
    }

    private static float[] random(Random random, int size) {
        float[] x = new float[size];
        for (int i = 0; i < size; i++) {
            x[i] = (float) random.nextGaussian();
        }
        return x;
    }
}
