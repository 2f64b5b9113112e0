package io.kdapack.core.linalg;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShape;
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
    private static final VectorSpecies<Float> SPECIES = VectorWidth.SPECIES;
    private static final int LANES = SPECIES.length();
    /**
     * Rows of the register tile, for the width found at run time: 8 × 2 vector accumulators with AVX-512 (16 of its
     * 32 registers, the two B vectors and the broadcasts beside them), 4 × 2 with AVX2 or SSE, whose 16 registers
     * a 6-row tile overflows (C2 hoists the broadcasts; measured at half the speed). The tile's shape
     * changes only which elements share a kernel call, never the order of any element's sum (see the class comment).
     */
    static final int MR = LANES >= 16 ? 8 : 4;
    /** A vector of {@link #MR} floats: a k step of a packed panel of A. */
    private static final VectorSpecies<Float> TILE_ROWS =
            VectorSpecies.of(float.class, VectorShape.forBitSize(MR * 32));
    /** Columns of the register tile: two vectors. */
    private static final int NR = 2 * LANES;
    /**
     * Depth of a packed block: a panel of B ({@code KC × NR} floats) stays in L1. Every element of C is summed a block
     * of k at a time, each block's sum then added to C in k order, so a product split into calls over consecutive
     * multiples of {@code KC} of k, each adding to C, gives the bits of the single call.
     */
    public static final int KC = 256;
    /** Rows of a packed block of A ({@code MC × KC} floats stay in L2); a multiple of both tile heights. */
    static final int MC = 96;
    /** Columns of a block of packed B ({@code KC × NC} floats, 1 MiB: the L2 of a current core). */
    static final int NC = 1024;
    /**
     * Multiply-adds per element read below which a parallel task of a long product is bound by its reads
     * ({@link Split#of}).
     */
    static final int STREAMING_INTENSITY = 96;
    /** Column panels of B a unit of B packing: untransposed, a k step of them is one contiguous run of B. */
    private static final int PACK_PANELS = 8;
    /** Below this many multiply-adds the packing costs more than it saves. */
    private static final long SMALL = 8 * 1024;

    /** Per-thread packed block of A ({@code MC × KC}); the multiply never forks, so a thread uses one at a time. */
    private static final ThreadLocal<float[]> PACKED_A = ThreadLocal.withInitial(() -> new float[MC * KC]);
    private static final ThreadLocal<float[]> EDGE = ThreadLocal.withInitial(() -> new float[MR * NR]);
    /**
     * Buffers for the packed B of one call. Taken and given back rather than held per thread: a thread joining a
     * parallel call can run another call's tasks meanwhile, so per-thread ownership would not be safe.
     */
    private static final BufferPool PACKED_B = new BufferPool();

    private Gemm() {
    }

    /** Columns of the register tile on this machine (two vectors of {@link VectorWidth#SPECIES}). */
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
        if (k == 0 || alpha == 0f || (long) m * n * k <= SMALL) {
            scale(0, m, n, beta, c, cOffset, ldc);
            if (k != 0 && alpha != 0f) {
                naive(transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, c, cOffset, ldc);
            }
            return;
        }
        Operands op = new Operands(transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset,
                ldc);
        float[] packedB = PACKED_B.take(op.packedBSize());
        try {
            for (int unit = 0; unit < op.packUnits(); unit++) {
                op.packB(unit, packedB);
            }
            op.multiply(0, m, 0, n, packedB);
        } finally {
            PACKED_B.give(packedB);
        }
    }

    /**
     * The same product with C split over {@code pool} in blocks of rows and of columns; bitwise equal to
     * {@link #sgemm} (a split never changes the order of an element's sum). B is packed once, in parallel, and shared.
     */
    public static void parallelSgemm(ForkJoinPool pool, boolean transA, boolean transB, int m, int n, int k, float alpha,
                                     float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                                     float beta, float[] c, int cOffset, int ldc) {
        int workers = pool.getParallelism();
        if (workers <= 1 || (long) m * n * k < 64L * 64 * 64 || alpha == 0f) {
            sgemm(transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
            return;
        }
        checkArguments(transA, transB, m, n, k, a, aOffset, lda, b, bOffset, ldb, c, cOffset, ldc);
        Operands op = new Operands(transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset,
                ldc);
        float[] packedB = PACKED_B.take(op.packedBSize());
        try {
            runIn(pool, () -> {
                packInParallel(op, packedB);
                multiplyInTasks(workers, op, packedB);
            });
        } finally {
            PACKED_B.give(packedB);
        }
    }

    /**
     * A matrix packed once as the B operand of many products: {@code op(B) [k×n]} in the panels {@link #sgemm} packs
     * per call. For a weight that meets block after block of rows (the LM head's), the products skip packing it again.
     * Close it to give its buffer back for reuse.
     */
    public static final class PackedB implements AutoCloseable {
        private final int n;
        private final int k;
        private float[] panels;

        private PackedB(int n, int k, float[] panels) {
            this.n = n;
            this.k = k;
            this.panels = panels;
        }

        /** Columns of op(B). */
        public int n() {
            return n;
        }

        /** Rows of op(B), the product's depth. */
        public int k() {
            return k;
        }

        float[] panels() {
            if (panels == null) {
                throw new IllegalStateException("packed B: already closed");
            }
            return panels;
        }

        @Override
        public void close() {
            PACKED_B.give(panels);
            panels = null;
        }
    }

    /**
     * Packs {@code op(B) [k×n]} once, on {@code pool}, for {@link #parallelSgemm(ForkJoinPool, boolean, int, float,
     * float[], int, int, PackedB, float, float[], int, int)}.
     *
     * @param transB {@code op(B) = Bᵀ}: B is stored {@code [n×k]} with leading dimension ldb, else {@code [k×n]}
     */
    public static PackedB packB(ForkJoinPool pool, boolean transB, int n, int k, float[] b, int bOffset, int ldb) {
        if (n < 0 || k < 0) {
            throw new IllegalArgumentException("n, k must be >= 0, got n=" + n + " k=" + k);
        }
        checkMatrix("b", b, bOffset, ldb, transB ? n : k, transB ? k : n);
        Operands op = new Operands(false, transB, 0, n, k, 1f, null, 0, 0, b, bOffset, ldb, 0f, null, 0, 0);
        float[] panels = PACKED_B.take(op.packedBSize());
        runIn(pool, () -> packInParallel(op, panels));
        return new PackedB(n, k, panels);
    }

    /**
     * {@code C[m×n] = alpha · op(A) · B + beta · C} with B packed beforehand ({@link #packB}), split over {@code pool}
     * as the other {@code parallelSgemm}; bitwise equal to {@link #sgemm} of the unpacked B.
     */
    public static void parallelSgemm(ForkJoinPool pool, boolean transA, int m, float alpha, float[] a, int aOffset,
                                     int lda, PackedB b, float beta, float[] c, int cOffset, int ldc) {
        int n = b.n();
        int k = b.k();
        if (m < 0) {
            throw new IllegalArgumentException("m must be >= 0, got " + m);
        }
        checkMatrix("a", a, aOffset, lda, transA ? k : m, transA ? m : k);
        checkMatrix("c", c, cOffset, ldc, m, n);
        if (m == 0 || n == 0) {
            return;
        }
        if (k == 0 || alpha == 0f) {
            scale(0, m, n, beta, c, cOffset, ldc);
            return;
        }
        Operands op = new Operands(transA, false, m, n, k, alpha, a, aOffset, lda, null, 0, 0, beta, c, cOffset, ldc);
        float[] panels = b.panels();
        if (pool.getParallelism() <= 1 || (long) m * n * k < 64L * 64 * 64) {
            op.multiply(0, m, 0, n, panels);
        } else {
            runIn(pool, () -> multiplyInTasks(pool.getParallelism(), op, panels));
        }
    }

    /**
     * Runs {@code body}, whose loops ({@link Team#forEach}) then run in {@code pool}: directly where the caller is one
     * of the pool's workers (a layer's product inside the model's step), else as a task of the pool, joined. A worker
     * that submitted a task and joined it could find it stolen and block, and the pool would then start a spare
     * worker to keep its parallelism: three threads on two cores (seen in profiles of the model's step).
     */
    private static void runIn(ForkJoinPool pool, Runnable body) {
        if (ForkJoinTask.getPool() == pool) {
            body.run();
        } else {
            pool.submit(body).join();
        }
    }

    /** All of {@code op}'s B packed into {@code dst}, its units spread over the pool the call runs in. */
    private static void packInParallel(Operands op, float[] dst) {
        Team.forEach(op.packUnits(), unit -> op.packB(unit, dst));
    }

    /** {@link Operands#multiply} of the whole of C as the tasks of {@link Split#of}, in the pool it runs in. */
    private static void multiplyInTasks(int workers, Operands op, float[] packedB) {
        Split split = Split.of(op.m(), op.n(), op.k(), workers);
        Team.forEach(split.tasks(op.m(), op.n()), task -> split.multiply(op, task, packedB));
    }

    /**
     * How a parallel product cuts C into tasks: blocks of {@code rowsPerBlock} rows (a multiple of {@link #MR}) by
     * {@code colsPerBlock} columns (a multiple of {@link #NR}).
     */
    record Split(int rowsPerBlock, int colsPerBlock) {

        /**
         * About four tasks a worker, row blocks first: row blocks of at least 4·MR rows where m allows, so that a
         * product with few rows (a weight gradient) does not have every task stream all of B. Splitting the rows first
         * packs each block of A once (a column split packs it once per column block): against row blocks of at least
         * MC rows, 512³ on two threads 6–9 % faster, weight gradients of 64–256 rows 28–37 % (in turns).
         *
         * <p>A split reads B once per row block and A once per column block: {@code rowBlocks·n + colBlocks·m} (times
         * k). Where fewer row blocks at least halve that, the fewest reads win: a B far larger than A, as in the LM
         * head's logits ({@code 256 × 32 000 × 256}: one row block, 14 % faster on two threads, in turns), where every
         * row block streamed all of the packed B from memory.
         *
         * <p>A long product of a small C (k of at least {@code 4·KC}, and tasks whose {@code rows·cols / (rows +
         * cols)}, the multiply-adds per element read, is under {@link #STREAMING_INTENSITY}) is bound by what its
         * tasks stream rather than by their sums: the weight gradients ({@code 256 × 256 × 4096}) and the LM head's
         * {@code dh} ({@code 256 × 256 × 32 000}). There each worker gets two tasks, split where they read the least,
         * A counted twice since each task packs its own (B is packed once for all): {@code 256 × 256 × 4096} in 2 × 2
         * blocks rather than 8 × 1 is 1.22× faster on two threads, {@code 64 × 256 × 4096} 1.10–1.16×, {@code 704 ×
         * 256 × 4096} and {@code 256 × 704 × 4096} 1.04–1.09× (in turns).
         */
        static Split of(int m, int n, int k, int workers) {
            int panels = (n + NR - 1) / NR;
            int tasks = workers * 4;
            Split split = withRowBlocks(m, rowBlocks(m, n, tasks, panels), tasks, panels);
            int rows = split.rowsPerBlock();
            int cols = split.colsPerBlock();
            if (k < 4 * KC || (long) rows * cols >= (long) STREAMING_INTENSITY * (rows + cols)) {
                return split;
            }
            tasks = workers * 2;
            int best = 1;
            double fewest = Double.MAX_VALUE;
            for (int r = 1; r <= Math.min(tasks, (m + MR - 1) / MR); r++) {
                double read = reads(r, m, n, tasks, panels, 2);
                if (read < fewest) {
                    best = r;
                    fewest = read;
                }
            }
            return withRowBlocks(m, best, tasks, panels);
        }

        /** The blocks of an {@code m × n} C: the tasks of the split. */
        int tasks(int m, int n) {
            return (m + rowsPerBlock - 1) / rowsPerBlock * columnBlocks(n);
        }

        /** {@link Operands#multiply} of block {@code task} of {@code op}'s C (row blocks of column blocks). */
        void multiply(Operands op, int task, float[] packedB) {
            int columnBlocks = columnBlocks(op.n());
            int from = task / columnBlocks * rowsPerBlock;
            int colFrom = task % columnBlocks * colsPerBlock;
            op.multiply(from, Math.min(op.m(), from + rowsPerBlock), colFrom, Math.min(op.n(), colFrom + colsPerBlock),
                    packedB);
        }

        private int columnBlocks(int n) {
            return (n + colsPerBlock - 1) / colsPerBlock;
        }

        /** {@code rowBlocks} blocks of rows, and the columns cut so that there are about {@code tasks} blocks. */
        private static Split withRowBlocks(int m, int rowBlocks, int tasks, int panels) {
            int rowsPerBlock = ((m + rowBlocks - 1) / rowBlocks + MR - 1) / MR * MR;
            int rowCount = (m + rowsPerBlock - 1) / rowsPerBlock;
            int colBlocks = Math.min(panels, (tasks + rowCount - 1) / rowCount);
            return new Split(rowsPerBlock, (panels + colBlocks - 1) / colBlocks * NR);
        }

        /** Row blocks of about {@code tasks} tasks, the rest of the split going over the columns (see {@link #of}). */
        private static int rowBlocks(int m, int n, int tasks, int panels) {
            int rows = Math.max(1, Math.min(tasks, m / (4 * MR)));
            double rowsFirst = reads(rows, m, n, tasks, panels, 1);
            int best = rows;
            double fewest = rowsFirst;
            for (int r = 1; r < rows; r++) {
                double read = reads(r, m, n, tasks, panels, 1);
                if (2 * read <= rowsFirst && read < fewest) {
                    best = r;
                    fewest = read;
                }
            }
            return best;
        }

        /**
         * What a split into {@code rowBlocks} row blocks reads of A and B, in units of k, each read of A counted
         * {@code aWeight} times.
         */
        private static double reads(int rowBlocks, int m, int n, int tasks, int panels, int aWeight) {
            int colBlocks = Math.min(panels, (tasks + rowBlocks - 1) / rowBlocks);
            return (double) rowBlocks * n + (double) aWeight * colBlocks * m;
        }
    }

    /**
     * One call's operands. B is packed for the whole of k: k block {@code pc} holds its column panels of
     * {@code [kc][NR]} back to back from {@code pc · paddedN}.
     */
    private record Operands(boolean transA, boolean transB, int m, int n, int k, float alpha,
                            float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                            float beta, float[] c, int cOffset, int ldc) {

        int panels() {
            return (n + NR - 1) / NR;
        }

        int packedBSize() {
            return panels() * NR * k;
        }

        /** Units of B packing: {@link #PACK_PANELS} column panels of one k block each. */
        int packUnits() {
            return (k + KC - 1) / KC * ((panels() + PACK_PANELS - 1) / PACK_PANELS);
        }

        void packB(int unit, float[] dst) {
            int groups = (panels() + PACK_PANELS - 1) / PACK_PANELS;
            int pc = unit / groups * KC;
            int kc = Math.min(KC, k - pc);
            int firstPanel = unit % groups * PACK_PANELS;
            int endPanel = Math.min(panels(), firstPanel + PACK_PANELS);
            int kBlock = pc * panels() * NR;
            if (!transB) {
                // Row by row of B across the group's full panels: one contiguous run of B a k step.
                int fullEnd = Math.min(endPanel, n / NR);
                for (int p = 0; p < kc; p++) {
                    int src = bOffset + (pc + p) * ldb;
                    for (int panel = firstPanel; panel < fullEnd; panel++) {
                        int jr = panel * NR;
                        int at = kBlock + jr * kc + p * NR;
                        FloatVector.fromArray(SPECIES, b, src + jr).intoArray(dst, at);
                        FloatVector.fromArray(SPECIES, b, src + jr + LANES).intoArray(dst, at + LANES);
                    }
                }
                firstPanel = Math.max(firstPanel, fullEnd);
            }
            for (int panel = firstPanel; panel < endPanel; panel++) {
                int jr = panel * NR;
                int base = kBlock + jr * kc;
                int cols = Math.min(NR, n - jr);
                if (transB) {
                    for (int j = 0; j < cols; j++) {
                        int src = bOffset + (jr + j) * ldb + pc;
                        for (int p = 0; p < kc; p++) {
                            dst[base + p * NR + j] = b[src + p];
                        }
                    }
                } else {
                    for (int p = 0; p < kc; p++) {
                        System.arraycopy(b, bOffset + (pc + p) * ldb + jr, dst, base + p * NR, cols);
                    }
                }
                if (cols < NR) {
                    for (int p = 0; p < kc; p++) {
                        java.util.Arrays.fill(dst, base + p * NR + cols, base + (p + 1) * NR, 0f);
                    }
                }
            }
        }

        /**
         * {@code C[from..to, colFrom..colTo) = alpha · op(A)[from..to) · op(B)[.., colFrom..colTo) + beta · C}, k
         * block by k block, in that order for every element; {@code colFrom} is a multiple of {@link #NR}.
         * The columns are taken {@link #NC} at a time, so that the packed B of one k block and column block stays in
         * L2 while every row block of A streams past it. With beta 0 the first k block's sums are stored over C rather
         * than added to a cleared C: one pass over C the fewer. (The bits are those of adding to +0, but for a sum that
         * underflows to −0, stored as such.)
         */
        void multiply(int from, int to, int colFrom, int colTo, float[] packedB) {
            boolean cleared = beta != 0f;
            if (cleared) {
                scale(from, to, colTo - colFrom, beta, c, cOffset + colFrom, ldc);
            }
            float[] packedA = PACKED_A.get();
            float[] edge = EDGE.get();
            int paddedN = panels() * NR;
            for (int jc = colFrom; jc < colTo; jc += NC) {
                int jEnd = Math.min(colTo, jc + NC);
                for (int pc = 0; pc < k; pc += KC) {
                    int kc = Math.min(KC, k - pc);
                    boolean store = pc == 0 && !cleared;
                    for (int ic = from; ic < to; ic += MC) {
                        int mc = Math.min(MC, to - ic);
                        packA(ic, mc, pc, kc, packedA);
                        for (int jr = jc; jr < jEnd; jr += NR) {
                            int cols = Math.min(NR, n - jr);
                            int bPanel = pc * paddedN + jr * kc;
                            for (int ir = 0; ir < mc; ir += MR) {
                                int rows = Math.min(MR, mc - ir);
                                int cIndex = cOffset + (ic + ir) * ldc + jr;
                                if (rows == MR && cols == NR) {
                                    kernel(kc, packedA, ir * kc, packedB, bPanel, c, cIndex, ldc, store);
                                } else {
                                    // Edge tile: computed whole into a scratch tile, then only its valid part added.
                                    kernel(kc, packedA, ir * kc, packedB, bPanel, edge, 0, NR, true);
                                    for (int r = 0; r < rows; r++) {
                                        for (int j = 0; j < cols; j++) {
                                            int ci = cIndex + r * ldc + j;
                                            c[ci] = store ? edge[r * NR + j] : c[ci] + edge[r * NR + j];
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }

        /** Packs {@code alpha · op(A)[ic..ic+mc, pc..pc+kc]} as panels of MR rows, {@code [kc][MR]} each, zero-padded. */
        private void packA(int ic, int mc, int pc, int kc, float[] dst) {
            if (transA) {
                packTransposedA(ic, mc, pc, kc, dst);
                return;
            }
            int[] rowStarts = new int[MR];
            for (int r = 0; r < MR; r++) {
                rowStarts[r] = r * lda;
            }
            for (int ir = 0; ir < mc; ir += MR) {
                int base = ir * kc;
                int rows = Math.min(MR, mc - ir);
                if (rows == MR) {
                    int src = aOffset + (ic + ir) * lda + pc;
                    for (int p = 0; p < kc; p++) {
                        FloatVector.fromArray(TILE_ROWS, a, src + p, rowStarts, 0).mul(alpha)
                                .intoArray(dst, base + p * MR);
                    }
                    continue;
                }
                java.util.Arrays.fill(dst, base, base + MR * kc, 0f);
                for (int r = 0; r < rows; r++) {
                    int src = aOffset + (ic + ir + r) * lda + pc;
                    for (int p = 0; p < kc; p++) {
                        dst[base + p * MR + r] = alpha * a[src + p];
                    }
                }
            }
        }

        /**
         * {@link #packA} when A is stored transposed: the {@code mc} values of op(A)'s column {@code p} are contiguous
         * in storage, so each k step is read as one run and scattered to the panels (rather than a stride of
         * {@code lda} between the reads of every panel).
         */
        private void packTransposedA(int ic, int mc, int pc, int kc, float[] dst) {
            int padded = (mc + MR - 1) / MR * MR;
            if (padded > mc) {
                java.util.Arrays.fill(dst, (padded - MR) * kc, padded * kc, 0f);
            }
            for (int p = 0; p < kc; p++) {
                int src = aOffset + (pc + p) * lda + ic;
                int ir = 0;
                for (; ir + MR <= mc; ir += MR) {
                    FloatVector.fromArray(TILE_ROWS, a, src + ir).mul(alpha).intoArray(dst, ir * kc + p * MR);
                }
                for (int r = 0; ir + r < mc; r++) {
                    dst[ir * kc + p * MR + r] = alpha * a[src + ir + r];
                }
            }
        }
    }

    /** The {@code MR × NR} register tile of this machine: its sums added to C, or with {@code overwrite} stored. */
    private static void kernel(int kc, float[] pa, int aPanel, float[] pb, int bPanel, float[] c, int cIndex, int ldc,
                               boolean overwrite) {
        switch (MR) {
            case 8 -> kernel8(kc, pa, aPanel, pb, bPanel, c, cIndex, ldc, overwrite);
            default -> kernel4(kc, pa, aPanel, pb, bPanel, c, cIndex, ldc, overwrite);
        }
    }

    /** 4-row tile: {@code C[r, 0..NR) (+)= Σ_p packedA[p, r] · packedB[p, 0..NR)}, {@code r < 4}. */
    private static void kernel4(int kc, float[] pa, int aPanel, float[] pb, int bPanel, float[] c, int cIndex, int ldc,
                                boolean overwrite) {
        FloatVector c00 = FloatVector.zero(SPECIES), c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES), c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES), c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES), c31 = FloatVector.zero(SPECIES);
        for (int p = 0; p < kc; p++) {
            int bi = bPanel + p * NR;
            int ai = aPanel + p * 4;
            FloatVector b0 = FloatVector.fromArray(SPECIES, pb, bi);
            FloatVector b1 = FloatVector.fromArray(SPECIES, pb, bi + LANES);
            FloatVector x0 = FloatVector.broadcast(SPECIES, pa[ai + 0]);
            c00 = x0.fma(b0, c00);
            c01 = x0.fma(b1, c01);
            FloatVector x1 = FloatVector.broadcast(SPECIES, pa[ai + 1]);
            c10 = x1.fma(b0, c10);
            c11 = x1.fma(b1, c11);
            FloatVector x2 = FloatVector.broadcast(SPECIES, pa[ai + 2]);
            c20 = x2.fma(b0, c20);
            c21 = x2.fma(b1, c21);
            FloatVector x3 = FloatVector.broadcast(SPECIES, pa[ai + 3]);
            c30 = x3.fma(b0, c30);
            c31 = x3.fma(b1, c31);
        }
        if (overwrite) {
            c00.intoArray(c, cIndex);
            c01.intoArray(c, cIndex + LANES);
            c10.intoArray(c, cIndex + ldc);
            c11.intoArray(c, cIndex + ldc + LANES);
            c20.intoArray(c, cIndex + 2 * ldc);
            c21.intoArray(c, cIndex + 2 * ldc + LANES);
            c30.intoArray(c, cIndex + 3 * ldc);
            c31.intoArray(c, cIndex + 3 * ldc + LANES);
        } else {
            int i0 = cIndex;
            FloatVector.fromArray(SPECIES, c, i0).add(c00).intoArray(c, i0);
            FloatVector.fromArray(SPECIES, c, i0 + LANES).add(c01).intoArray(c, i0 + LANES);
            int i1 = cIndex + ldc;
            FloatVector.fromArray(SPECIES, c, i1).add(c10).intoArray(c, i1);
            FloatVector.fromArray(SPECIES, c, i1 + LANES).add(c11).intoArray(c, i1 + LANES);
            int i2 = cIndex + 2 * ldc;
            FloatVector.fromArray(SPECIES, c, i2).add(c20).intoArray(c, i2);
            FloatVector.fromArray(SPECIES, c, i2 + LANES).add(c21).intoArray(c, i2 + LANES);
            int i3 = cIndex + 3 * ldc;
            FloatVector.fromArray(SPECIES, c, i3).add(c30).intoArray(c, i3);
            FloatVector.fromArray(SPECIES, c, i3 + LANES).add(c31).intoArray(c, i3 + LANES);
        }
    }

    /** 8-row tile: {@code C[r, 0..NR) (+)= Σ_p packedA[p, r] · packedB[p, 0..NR)}, {@code r < 8}. */
    private static void kernel8(int kc, float[] pa, int aPanel, float[] pb, int bPanel, float[] c, int cIndex, int ldc,
                                boolean overwrite) {
        FloatVector c00 = FloatVector.zero(SPECIES), c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES), c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES), c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES), c31 = FloatVector.zero(SPECIES);
        FloatVector c40 = FloatVector.zero(SPECIES), c41 = FloatVector.zero(SPECIES);
        FloatVector c50 = FloatVector.zero(SPECIES), c51 = FloatVector.zero(SPECIES);
        FloatVector c60 = FloatVector.zero(SPECIES), c61 = FloatVector.zero(SPECIES);
        FloatVector c70 = FloatVector.zero(SPECIES), c71 = FloatVector.zero(SPECIES);
        for (int p = 0; p < kc; p++) {
            int bi = bPanel + p * NR;
            int ai = aPanel + p * 8;
            FloatVector b0 = FloatVector.fromArray(SPECIES, pb, bi);
            FloatVector b1 = FloatVector.fromArray(SPECIES, pb, bi + LANES);
            FloatVector x0 = FloatVector.broadcast(SPECIES, pa[ai + 0]);
            c00 = x0.fma(b0, c00);
            c01 = x0.fma(b1, c01);
            FloatVector x1 = FloatVector.broadcast(SPECIES, pa[ai + 1]);
            c10 = x1.fma(b0, c10);
            c11 = x1.fma(b1, c11);
            FloatVector x2 = FloatVector.broadcast(SPECIES, pa[ai + 2]);
            c20 = x2.fma(b0, c20);
            c21 = x2.fma(b1, c21);
            FloatVector x3 = FloatVector.broadcast(SPECIES, pa[ai + 3]);
            c30 = x3.fma(b0, c30);
            c31 = x3.fma(b1, c31);
            FloatVector x4 = FloatVector.broadcast(SPECIES, pa[ai + 4]);
            c40 = x4.fma(b0, c40);
            c41 = x4.fma(b1, c41);
            FloatVector x5 = FloatVector.broadcast(SPECIES, pa[ai + 5]);
            c50 = x5.fma(b0, c50);
            c51 = x5.fma(b1, c51);
            FloatVector x6 = FloatVector.broadcast(SPECIES, pa[ai + 6]);
            c60 = x6.fma(b0, c60);
            c61 = x6.fma(b1, c61);
            FloatVector x7 = FloatVector.broadcast(SPECIES, pa[ai + 7]);
            c70 = x7.fma(b0, c70);
            c71 = x7.fma(b1, c71);
        }
        if (overwrite) {
            c00.intoArray(c, cIndex);
            c01.intoArray(c, cIndex + LANES);
            c10.intoArray(c, cIndex + ldc);
            c11.intoArray(c, cIndex + ldc + LANES);
            c20.intoArray(c, cIndex + 2 * ldc);
            c21.intoArray(c, cIndex + 2 * ldc + LANES);
            c30.intoArray(c, cIndex + 3 * ldc);
            c31.intoArray(c, cIndex + 3 * ldc + LANES);
            c40.intoArray(c, cIndex + 4 * ldc);
            c41.intoArray(c, cIndex + 4 * ldc + LANES);
            c50.intoArray(c, cIndex + 5 * ldc);
            c51.intoArray(c, cIndex + 5 * ldc + LANES);
            c60.intoArray(c, cIndex + 6 * ldc);
            c61.intoArray(c, cIndex + 6 * ldc + LANES);
            c70.intoArray(c, cIndex + 7 * ldc);
            c71.intoArray(c, cIndex + 7 * ldc + LANES);
        } else {
            int i0 = cIndex;
            FloatVector.fromArray(SPECIES, c, i0).add(c00).intoArray(c, i0);
            FloatVector.fromArray(SPECIES, c, i0 + LANES).add(c01).intoArray(c, i0 + LANES);
            int i1 = cIndex + ldc;
            FloatVector.fromArray(SPECIES, c, i1).add(c10).intoArray(c, i1);
            FloatVector.fromArray(SPECIES, c, i1 + LANES).add(c11).intoArray(c, i1 + LANES);
            int i2 = cIndex + 2 * ldc;
            FloatVector.fromArray(SPECIES, c, i2).add(c20).intoArray(c, i2);
            FloatVector.fromArray(SPECIES, c, i2 + LANES).add(c21).intoArray(c, i2 + LANES);
            int i3 = cIndex + 3 * ldc;
            FloatVector.fromArray(SPECIES, c, i3).add(c30).intoArray(c, i3);
            FloatVector.fromArray(SPECIES, c, i3 + LANES).add(c31).intoArray(c, i3 + LANES);
            int i4 = cIndex + 4 * ldc;
            FloatVector.fromArray(SPECIES, c, i4).add(c40).intoArray(c, i4);
            FloatVector.fromArray(SPECIES, c, i4 + LANES).add(c41).intoArray(c, i4 + LANES);
            int i5 = cIndex + 5 * ldc;
            FloatVector.fromArray(SPECIES, c, i5).add(c50).intoArray(c, i5);
            FloatVector.fromArray(SPECIES, c, i5 + LANES).add(c51).intoArray(c, i5 + LANES);
            int i6 = cIndex + 6 * ldc;
            FloatVector.fromArray(SPECIES, c, i6).add(c60).intoArray(c, i6);
            FloatVector.fromArray(SPECIES, c, i6 + LANES).add(c61).intoArray(c, i6 + LANES);
            int i7 = cIndex + 7 * ldc;
            FloatVector.fromArray(SPECIES, c, i7).add(c70).intoArray(c, i7);
            FloatVector.fromArray(SPECIES, c, i7 + LANES).add(c71).intoArray(c, i7 + LANES);
        }
    }

    /** {@code C[from..to) *= beta}, or cleared when beta is 0. */
    private static void scale(int from, int to, int n, float beta, float[] c, int cOffset, int ldc) {
        if (beta == 1f) {
            return;
        }
        for (int i = from; i < to; i++) {
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
}
