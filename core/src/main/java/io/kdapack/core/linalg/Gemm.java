package io.kdapack.core.linalg;

import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Single-precision matrix product {@code C = alpha·op(A)·op(B) + beta·C} on row-major arrays, with the
 * Vector API.
 *
 * <p>The structure is the classic one of optimised BLAS: the k axis is cut into blocks of {@link #KC},
 * the rows into blocks of {@link #MC}; each block of B is packed into panels of {@link #nr} columns and
 * each block of A into panels of {@link #MR} rows, so that the micro-kernel streams both from contiguous
 * memory and keeps an {@code MR × nr} tile of C in registers. Packing also absorbs the transposes.
 *
 * <p>Every element of C is accumulated over k in the same order whatever the shape of the call or the
 * number of threads, so results are bitwise reproducible.
 */
public final class Gemm {
    private static final VectorSpecies<Float> SPECIES = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = SPECIES.length();
    /** Rows of the register tile: 4 × 2 vector accumulators fit the 16 AVX2 registers without spilling (6 rows spill). */
    static final int MR = 4;
    /** Columns of the register tile: two vectors. */
    private static final int NR = 2 * LANES;
    /** Depth of a packed block: a panel of B ({@code KC × NR} floats) stays in L1. */
    static final int KC = 256;
    /** Rows of a packed block of A ({@code MC × KC} floats stay in L2). */
    static final int MC = 96;
    /** Below this many multiply-adds the packing costs more than it saves. */
    private static final long SMALL = 8 * 1024;

    private static final ThreadLocal<float[][]> BUFFERS = ThreadLocal.withInitial(
            () -> new float[][] {new float[MC * KC], new float[0], new float[MR * NR]});

    private Gemm() {
    }

    /** Columns of the register tile on this machine (two vectors of the preferred species). */
    public static int nr() {
        return NR;
    }

    /**
     * {@code C[m×n] = alpha · op(A) · op(B) + beta · C}, single-threaded.
     *
     * @param transA {@code op(A) = Aᵀ}: A is stored {@code [k×m]} with leading dimension lda, else {@code [m×k]}
     * @param transB {@code op(B) = Bᵀ}: B is stored {@code [n×k]} with leading dimension ldb, else {@code [k×n]}
     * @param beta   0 overwrites C (its old contents, even NaN, are ignored)
     */
    public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                             float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                             float beta, float[] c, int cOffset, int ldc) {
        checkArguments(transA, transB, m, n, k, a, aOffset, lda, b, bOffset, ldb, c, cOffset, ldc);
        if (m == 0 || n == 0) {
            return;
        }
        scale(m, n, beta, c, cOffset, ldc);
        if (k == 0 || alpha == 0f) {
            return;
        }
        if ((long) m * n * k <= SMALL) {
            naive(transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, c, cOffset, ldc);
            return;
        }
        float[][] buffers = BUFFERS.get();
        float[] packedA = buffers[0];
        int panelsB = (n + NR - 1) / NR;
        if (buffers[1].length < panelsB * NR * KC) {
            buffers[1] = new float[panelsB * NR * KC];
        }
        float[] packedB = buffers[1];
        float[] edge = buffers[2];
        for (int pc = 0; pc < k; pc += KC) {
            int kc = Math.min(KC, k - pc);
            packB(transB, b, bOffset, ldb, pc, kc, n, packedB);
            for (int ic = 0; ic < m; ic += MC) {
                int mc = Math.min(MC, m - ic);
                packA(transA, a, aOffset, lda, ic, mc, pc, kc, alpha, packedA);
                for (int jr = 0; jr < n; jr += NR) {
                    int nc = Math.min(NR, n - jr);
                    int bPanel = (jr / NR) * NR * kc;
                    for (int ir = 0; ir < mc; ir += MR) {
                        int rows = Math.min(MR, mc - ir);
                        int aPanel = (ir / MR) * MR * kc;
                        int cIndex = cOffset + (ic + ir) * ldc + jr;
                        if (rows == MR && nc == NR) {
                            kernel(kc, packedA, aPanel, packedB, bPanel, c, cIndex, ldc);
                        } else {
                            java.util.Arrays.fill(edge, 0f);
                            kernel(kc, packedA, aPanel, packedB, bPanel, edge, 0, NR);
                            for (int r = 0; r < rows; r++) {
                                for (int j = 0; j < nc; j++) {
                                    c[cIndex + r * ldc + j] += edge[r * NR + j];
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * The same product with the rows of C split over {@code pool}; bitwise equal to {@link #sgemm}.
     */
    public static void parallelSgemm(ForkJoinPool pool, boolean transA, boolean transB, int m, int n, int k, float alpha,
                                     float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                                     float beta, float[] c, int cOffset, int ldc) {
        int workers = pool.getParallelism();
        if (workers <= 1 || (long) m * n * k < 64L * 64 * 64 || m < 2 * MR) {
            sgemm(transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
            return;
        }
        checkArguments(transA, transB, m, n, k, a, aOffset, lda, b, bOffset, ldb, c, cOffset, ldc);
        int blocks = Math.min(m / MR, workers * 4);
        int rowsPerBlock = ((m + blocks - 1) / blocks + MR - 1) / MR * MR;
        int count = (m + rowsPerBlock - 1) / rowsPerBlock;
        pool.submit(() -> IntStream.range(0, count).parallel().forEach(block -> {
            int row = block * rowsPerBlock;
            int rows = Math.min(rowsPerBlock, m - row);
            int aStart = transA ? aOffset + row : aOffset + row * lda;
            sgemm(transA, transB, rows, n, k, alpha, a, aStart, lda, b, bOffset, ldb, beta, c, cOffset + row * ldc, ldc);
        })).join();
    }

    /** {@code MR × NR} register tile: {@code C[r, 0..NR) += Σ_p packedA[p, r] · packedB[p, 0..NR)}. */
    private static void kernel(int kc, float[] pa, int aPanel, float[] pb, int bPanel, float[] c, int cIndex, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES), c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES), c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES), c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES), c31 = FloatVector.zero(SPECIES);
        int ai = aPanel;
        int bi = bPanel;
        for (int p = 0; p < kc; p++, ai += MR, bi += NR) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, pb, bi);
            FloatVector b1 = FloatVector.fromArray(SPECIES, pb, bi + LANES);
            FloatVector x = FloatVector.broadcast(SPECIES, pa[ai]);
            c00 = x.fma(b0, c00);
            c01 = x.fma(b1, c01);
            x = FloatVector.broadcast(SPECIES, pa[ai + 1]);
            c10 = x.fma(b0, c10);
            c11 = x.fma(b1, c11);
            x = FloatVector.broadcast(SPECIES, pa[ai + 2]);
            c20 = x.fma(b0, c20);
            c21 = x.fma(b1, c21);
            x = FloatVector.broadcast(SPECIES, pa[ai + 3]);
            c30 = x.fma(b0, c30);
            c31 = x.fma(b1, c31);
        }
        accumulate(c, cIndex, c00, c01);
        accumulate(c, cIndex + ldc, c10, c11);
        accumulate(c, cIndex + 2 * ldc, c20, c21);
        accumulate(c, cIndex + 3 * ldc, c30, c31);
    }

    private static void accumulate(float[] c, int index, FloatVector v0, FloatVector v1) {
        FloatVector.fromArray(SPECIES, c, index).add(v0).intoArray(c, index);
        FloatVector.fromArray(SPECIES, c, index + LANES).add(v1).intoArray(c, index + LANES);
    }

    /** Packs {@code alpha · op(A)[ic..ic+mc, pc..pc+kc]} as panels of MR rows, {@code [kc][MR]} each, zero-padded. */
    private static void packA(boolean transA, float[] a, int aOffset, int lda, int ic, int mc, int pc, int kc,
                              float alpha, float[] dst) {
        for (int ir = 0; ir < mc; ir += MR) {
            int base = (ir / MR) * MR * kc;
            int rows = Math.min(MR, mc - ir);
            for (int p = 0; p < kc; p++) {
                int d = base + p * MR;
                for (int r = 0; r < rows; r++) {
                    int row = ic + ir + r;
                    int col = pc + p;
                    dst[d + r] = alpha * (transA ? a[aOffset + col * lda + row] : a[aOffset + row * lda + col]);
                }
                for (int r = rows; r < MR; r++) {
                    dst[d + r] = 0f;
                }
            }
        }
    }

    /** Packs {@code op(B)[pc..pc+kc, 0..n]} as panels of NR columns, {@code [kc][NR]} each, zero-padded. */
    private static void packB(boolean transB, float[] b, int bOffset, int ldb, int pc, int kc, int n, float[] dst) {
        for (int jr = 0; jr < n; jr += NR) {
            int base = (jr / NR) * NR * kc;
            int cols = Math.min(NR, n - jr);
            for (int p = 0; p < kc; p++) {
                int d = base + p * NR;
                if (!transB) {
                    System.arraycopy(b, bOffset + (pc + p) * ldb + jr, dst, d, cols);
                } else {
                    for (int j = 0; j < cols; j++) {
                        dst[d + j] = b[bOffset + (jr + j) * ldb + pc + p];
                    }
                }
                for (int j = cols; j < NR; j++) {
                    dst[d + j] = 0f;
                }
            }
        }
    }

    private static void scale(int m, int n, float beta, float[] c, int cOffset, int ldc) {
        if (beta == 1f) {
            return;
        }
        for (int i = 0; i < m; i++) {
            int row = cOffset + i * ldc;
            if (beta == 0f) {
                java.util.Arrays.fill(c, row, row + n, 0f);
            } else {
                for (int j = 0; j < n; j++) {
                    c[row + j] *= beta;
                }
            }
        }
    }

    /**
     * Small products without packing, in exactly the accumulation order of the blocked path (a fused
     * multiply-add chain per k block of {@link #KC}, then added to C), so that results never depend on
     * which path a call takes.
     */
    private static void naive(boolean transA, boolean transB, int m, int n, int k, float alpha,
                              float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                              float[] c, int cOffset, int ldc) {
        for (int pc = 0; pc < k; pc += KC) {
            int end = Math.min(k, pc + KC);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    float sum = 0f;
                    for (int p = pc; p < end; p++) {
                        float x = transA ? a[aOffset + p * lda + i] : a[aOffset + i * lda + p];
                        float y = transB ? b[bOffset + j * ldb + p] : b[bOffset + p * ldb + j];
                        sum = Math.fma(alpha * x, y, sum);
                    }
                    c[cOffset + i * ldc + j] += sum;
                }
            }
        }
    }

    private static void checkArguments(boolean transA, boolean transB, int m, int n, int k,
                                       float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                                       float[] c, int cOffset, int ldc) {
        if (m < 0 || n < 0 || k < 0) {
            throw new IllegalArgumentException("m, n, k must be >= 0, got m=" + m + " n=" + n + " k=" + k);
        }
        checkMatrix("a", a, aOffset, lda, transA ? k : m, transA ? m : k);
        checkMatrix("b", b, bOffset, ldb, transB ? n : k, transB ? k : n);
        checkMatrix("c", c, cOffset, ldc, m, n);
    }

    private static void checkMatrix(String name, float[] x, int offset, int ld, int rows, int cols) {
        if (rows == 0 || cols == 0) {
            return;
        }
        if (ld < cols) {
            throw new IllegalArgumentException("ld" + name + " must be >= " + cols + ", got " + ld);
        }
        long last = (long) offset + (long) (rows - 1) * ld + cols;
        if (offset < 0 || last > x.length) {
            throw new IllegalArgumentException(name + ": a " + rows + "x" + cols + " matrix at offset " + offset
                    + " with leading dimension " + ld + " needs " + last + " elements, array has " + x.length);
        }
    }

    /**
     * Achieved GFLOP/s of a 512³ product on {@code threads} threads: the best of ten repetitions after a
     * warm-up long enough for the JIT to compile the kernel. The machine's practical fp32 ceiling, for
     * benchmarks to compare against.
     */
    public static double measureGflops(int threads) {
        int size = 512;
        float[] a = new float[size * size];
        float[] b = new float[size * size];
        float[] c = new float[size * size];
        java.util.Random random = new java.util.Random(1);
        for (int i = 0; i < a.length; i++) {
            a[i] = random.nextFloat() - 0.5f;
            b[i] = random.nextFloat() - 0.5f;
        }
        ForkJoinPool pool = new ForkJoinPool(threads);
        try {
            long warmUpEnd = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < warmUpEnd) {
                parallelSgemm(pool, false, false, size, size, size, 1f, a, 0, size, b, 0, size, 0f, c, 0, size);
            }
            double best = Double.MAX_VALUE;
            for (int rep = 0; rep < 10; rep++) {
                long t0 = System.nanoTime();
                parallelSgemm(pool, false, false, size, size, size, 1f, a, 0, size, b, 0, size, 0f, c, 0, size);
                best = Math.min(best, (System.nanoTime() - t0) * 1e-9);
            }
            return 2.0 * size * size * size / best * 1e-9;
        } finally {
            pool.shutdown();
        }
    }
}
