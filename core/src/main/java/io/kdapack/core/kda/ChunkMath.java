package io.kdapack.core.kda;

import io.kdapack.core.linalg.VectorWidth;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Small dense kernels of the chunked KDA on row-major float arrays with offsets, written with the Vector
 * API: each loop is a vector body followed by a scalar tail, so any length ≥ 0 works. Single-threaded;
 * the caller parallelises over heads.
 *
 * <p>Bitwise reproducible: only operations with one correctly rounded IEEE result are used (add, mul,
 * fma, exact conversions). The Vector API's {@code EXP} and {@code reduceLanes(ADD)} are avoided on
 * purpose: their compiled and interpreted forms round differently or sum in another order, so results
 * would change while the JIT warms up. Results do not depend on the vector width either: every scalar tail
 * runs the operations of its vector body (the same fused multiply-adds, the same polynomial {@code exp}), each
 * product element accumulates in its own lane in depth order, and the one horizontal sum, {@link #dot}, has the
 * fixed layout of {@link VectorWidth#dot}.
 */
final class ChunkMath {

    static final VectorSpecies<Float> SPECIES = VectorWidth.SPECIES;
    private static final int LANES = SPECIES.length();
    /** Columns of B (and C) that a narrow register tile covers: two vectors. */
    private static final int STRIPE = 2 * LANES;
    /**
     * Columns of a wide register tile: four vectors where vectors are of 16 floats (AVX-512, whose 32 registers hold
     * 6 × 4 accumulators, four B vectors and a broadcast: 10 loads per 24 multiply-adds instead of 8 per 12; 1.1–1.2×
     * the rate on 64×64×64 products), else two (a 6 × 4 tile of AVX2 vectors would not fit its 16 registers).
     * The tile's width changes which elements share a loop, never the terms or the order of an element's sum.
     */
    private static final int WIDE_STRIPE = LANES >= 16 ? 4 * LANES : STRIPE;
    /**
     * The leading dimension of the transposed A that the chunk's products read most (its {@code [64×64]} blocks, and
     * {@code [L,K]} rows at K = 64): the 6-row tiles have loops of their own for it ({@link #tile6x4Transposed}).
     */
    private static final int TRANSPOSED_LD = 64;

    private ChunkMath() {
    }

    /** {@code y[yOff …+n] += a · x[xOff …+n]}. */
    static void axpy(int n, float a, float[] x, int xOff, float[] y, int yOff) {
        int i = 0;
        FloatVector av = FloatVector.broadcast(SPECIES, a);
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector yv = FloatVector.fromArray(SPECIES, y, yOff + i);
            FloatVector.fromArray(SPECIES, x, xOff + i).fma(av, yv).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            y[yOff + i] = Math.fma(x[xOff + i], a, y[yOff + i]);
        }
    }

    /** {@code Σ x[xOff+i]·y[yOff+i]} over {@code n} entries, in the width-independent order of {@link VectorWidth#dot}. */
    static float dot(int n, float[] x, int xOff, float[] y, int yOff) {
        return VectorWidth.dot(n, x, xOff, y, yOff);
    }

    /** {@code out[outOff …+n] = a · x[xOff …+n]} (in place when out is x at the same offset). */
    static void scale(int n, float a, float[] x, int xOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector.fromArray(SPECIES, x, xOff + i).mul(a).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = a * x[xOff + i];
        }
    }

    /** {@code out[i] = x[i] · y[i]} over {@code n} entries. */
    static void multiply(int n, float[] x, int xOff, float[] y, int yOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector.fromArray(SPECIES, x, xOff + i).mul(FloatVector.fromArray(SPECIES, y, yOff + i))
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = x[xOff + i] * y[yOff + i];
        }
    }

    /** {@code out[i] += x[i] · y[i]} over {@code n} entries. */
    static void multiplyAdd(int n, float[] x, int xOff, float[] y, int yOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector o = FloatVector.fromArray(SPECIES, out, outOff + i);
            FloatVector.fromArray(SPECIES, x, xOff + i).fma(FloatVector.fromArray(SPECIES, y, yOff + i), o)
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = Math.fma(x[xOff + i], y[yOff + i], out[outOff + i]);
        }
    }

    /** {@code out[i] = exp(x[i])} over {@code n} entries. */
    static void exp(int n, float[] x, int xOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            exp(FloatVector.fromArray(SPECIES, x, xOff + i)).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = exp(x[xOff + i]);
        }
    }

    /**
     * {@code exp(x)} per lane for {@code x ≤ 0} (the only arguments the chunked form produces), relative
     * error a few ulp: {@code x = n·ln2 + r} with {@code |r| ≤ ln2/2}, a degree-7 Taylor polynomial in
     * {@code r} (truncation error below 1e-8), times {@code 2^n} built in the exponent bits; exactly 0 below
     * {@link #EXP_CUTOFF}.
     *
     * <p>The cut: a decay below {@code e^−64 ≈ 1.6e-28} is 0. What it drops is 28 orders of magnitude under the
     * terms it is summed with (every row's own pair term {@code q_r·k_r} has no decay at all), so no float result
     * moves by more than rounding; and what it buys is the absence of subnormal floats. Without the cut, strongly
     * decaying gates (a lower-bound gate at −5, a softplus gate with a large {@code A_log}) give decays down to
     * {@code e^−87}, whose products with q and k and then with everything else are subnormal, and x86 cores
     * (Intel's at least; Java cannot set their flush-to-zero mode) take a microcode assist of about a hundred
     * cycles for each instruction that meets one: such a call ran 3× slower than with mild gates (docs/kda.md).
     * Arguments are clamped at −88 first, so that the exponent bits stay in range. (The activations' exp,
     * {@code linalg.ExpKernels}, clamps at −87 instead: a decay must reach exact 0 for a hard reset, an
     * activation need not.)
     */
    static FloatVector exp(FloatVector x) {
        FloatVector shifter = FloatVector.broadcast(SPECIES, ROUNDING_SHIFTER);
        FloatVector clamped = x.max(EXP_FLOOR);
        FloatVector shifted = clamped.fma(FloatVector.broadcast(SPECIES, LOG2_E), shifter);
        FloatVector n = shifted.sub(shifter);
        FloatVector r = n.fma(FloatVector.broadcast(SPECIES, -LN2_HI), clamped);
        r = n.fma(FloatVector.broadcast(SPECIES, -LN2_LO), r);
        FloatVector p = FloatVector.broadcast(SPECIES, 1f / 5040f);
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 720f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 120f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 24f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 6f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 0.5f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f));
        IntVector exponent = ((IntVector) n.convert(VectorOperators.F2I, 0)).add(127).lanewise(VectorOperators.LSHL, 23);
        return p.mul(exponent.reinterpretAsFloats()).blend(0f, x.compare(VectorOperators.LT, EXP_CUTOFF));
    }

    /** {@link #exp(FloatVector)} of one float, by the same operations: the scalar tails' exp. */
    static float exp(float x) {
        float clamped = Math.max(x, EXP_FLOOR);
        float shifted = Math.fma(clamped, LOG2_E, ROUNDING_SHIFTER);
        float n = shifted - ROUNDING_SHIFTER;
        float r = Math.fma(n, -LN2_HI, clamped);
        r = Math.fma(n, -LN2_LO, r);
        float p = 1f / 5040f;
        p = Math.fma(p, r, 1f / 720f);
        p = Math.fma(p, r, 1f / 120f);
        p = Math.fma(p, r, 1f / 24f);
        p = Math.fma(p, r, 1f / 6f);
        p = Math.fma(p, r, 0.5f);
        p = Math.fma(p, r, 1f);
        p = Math.fma(p, r, 1f);
        return x < EXP_CUTOFF ? 0f : p * Float.intBitsToFloat(((int) n + 127) << 23);
    }

    private static final float ROUNDING_SHIFTER = 12582912f; // 1.5·2^23: adding it rounds to an integer
    private static final float LOG2_E = 1.44269504f;
    private static final float LN2_HI = 0.693145752f; // ln 2 split so that n·LN2_HI is exact
    private static final float LN2_LO = 1.42860677e-6f;
    private static final float EXP_FLOOR = -88f;
    /**
     * Below this argument {@link #exp(FloatVector)} is 0 (see there). {@link PairwiseDecay} factors a block only
     * while its exponents stay within ±{@code −EXP_CUTOFF}, so the cut never meets a factor that a larger one
     * multiplies back.
     */
    static final float EXP_CUTOFF = -64f;

    /**
     * What a product may skip: the zeros of a triangular operand, or the unwanted half of the result. A triangular A
     * may also be block diagonal by document ({@link #lowerA(int[])}, {@link #upperA(int[])}): a register tile of rows
     * then sums only over the depths of its rows' documents. Skipped terms are stored zeros of A: leading ones leave
     * an accumulator of +0 as it is, trailing ones could only turn a sum of −0 into +0.
     */
    static final class Structure {
        /** Dense: nothing skipped. */
        static final Structure FULL = new Structure(Kind.FULL, null);
        /** {@code op(A)} is lower triangular (zeros stored above its diagonal): row i sums over depth 0 … i. */
        static final Structure LOWER_A = new Structure(Kind.LOWER_A, null);
        /** {@code op(A)} is upper triangular (zeros stored below its diagonal): row i sums over depth i … k−1. */
        static final Structure UPPER_A = new Structure(Kind.UPPER_A, null);
        /**
         * Only C's lower triangle ({@code j ≤ i}) is wanted: register tiles wholly above the diagonal are not
         * computed, so entries above the diagonal hold either products or old values, for the caller to ignore.
         */
        static final Structure LOWER_C = new Structure(Kind.LOWER_C, null);

        private enum Kind { FULL, LOWER_A, UPPER_A, LOWER_C }

        private final Kind kind;
        /** {@link #lowerA}'s first depth of each row, {@link #upperA}'s end; null for the whole triangle. */
        private final int[] bounds;
        /** How far the triangle's edge lies right of the diagonal ({@link #lowerA(int)}, {@link #upperA(int)}). */
        private final int shift;

        private Structure(Kind kind, int[] bounds) {
            this(kind, bounds, 0);
        }

        private Structure(Kind kind, int[] bounds, int shift) {
            this.kind = kind;
            this.bounds = bounds;
            this.shift = shift;
        }

        /**
         * {@code op(A)} lower triangular and zero left of {@code rowStart[i]} in row i (non-decreasing: the first row
         * of each row's document): row i sums over depth {@code rowStart[i] … i}. Reads the array at each product.
         */
        static Structure lowerA(int[] rowStart) {
            return new Structure(Kind.LOWER_A, rowStart);
        }

        /**
         * {@code op(A)} upper triangular and zero from {@code rowEnd[i]} on in row i (non-decreasing: one past the last
         * row of each row's document): row i sums over depth {@code i … rowEnd[i]−1}. Reads the array at each product.
         */
        static Structure upperA(int[] rowEnd) {
            return new Structure(Kind.UPPER_A, rowEnd);
        }

        /**
         * {@code op(A)} zero right of the {@code shift}-th diagonal above the main one: row i sums over depth
         * {@code 0 … i + shift} (a triangle that starts {@code shift} columns into the matrix).
         */
        static Structure lowerA(int shift) {
            return new Structure(Kind.LOWER_A, null, shift);
        }

        /**
         * {@code op(A)} zero left of the {@code shift}-th diagonal below the main one: row i sums over depth
         * {@code max(0, i − shift) … k−1} (the transpose of {@link #lowerA(int)}).
         */
        static Structure upperA(int shift) {
            return new Structure(Kind.UPPER_A, null, shift);
        }

        /** The first depth index a tile of rows from {@code row} needs. */
        int depthFrom(int row) {
            return switch (kind) {
                case UPPER_A -> Math.max(0, row - shift);
                case LOWER_A -> bounds == null ? 0 : bounds[row];
                default -> 0;
            };
        }

        /** One past the last depth index a tile of rows before {@code rowEnd} needs. */
        int depthTo(int rowEnd, int k) {
            return switch (kind) {
                case LOWER_A -> Math.min(k, rowEnd + shift);
                case UPPER_A -> bounds == null ? k : Math.min(k, bounds[rowEnd - 1]);
                default -> k;
            };
        }

        boolean lowerC() {
            return kind == Kind.LOWER_C;
        }
    }

    /**
     * {@code C[m×n] = alpha · op(A) · B + beta · C} for small row-major blocks: each stripe of B's columns (four
     * vectors wide on AVX-512, else two: {@link #WIDE_STRIPE}) is copied to a per-thread panel ({@link #packStripe}),
     * unless it is B's whole rows ({@link #readsInPlace}), and A is read in place; a 6-row (then a 4-, 3- or 2-row)
     * tile of C over the stripe stays in registers (at two vectors, 12 accumulators, two B vectors and one broadcast
     * fill the 16 AVX2 registers; about 40% faster than 4 rows on 64×64×64), and every element is accumulated over k
     * in order (bitwise reproducible, whatever the tile). {@code op(A) = Aᵀ}
     * ({@code A} stored {@code [k×m]}) when {@code transA}. {@code beta = 0} overwrites C. A triangular
     * {@code structure} skips only terms whose A entry is a stored zero, which leave an accumulator unchanged,
     * so the result is bitwise that of {@link Structure#FULL} for finite B.
     */
    static void matmul(Structure structure, boolean transA, int m, int n, int k, float alpha, float[] a, int aOff,
                       int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
        int rowStep = transA ? 1 : lda;
        int depthStep = transA ? lda : 1;
        float[] panel = n >= STRIPE ? stripePanel(k) : null;
        int j = 0;
        for (int width; j + STRIPE <= n; j += width) {
            width = stripeWidth(n - j);
            if (readsInPlace(width, ldb)) {
                stripeRows(structure, m, k, j, width, alpha, a, aOff, rowStep, depthStep, b, bOff + j, beta, c, cOff,
                        ldc);
            } else {
                packStripe(k, width, b, bOff + j, ldb, panel);
                stripeRows(structure, m, k, j, width, alpha, a, aOff, rowStep, depthStep, panel, 0, beta, c, cOff,
                        ldc);
            }
        }
        restColumns(structure, m, k, j, n, alpha, a, aOff, rowStep, depthStep, b, bOff, ldb, beta, c, cOff, ldc);
    }

    /**
     * {@code C[m×n] = alpha · op(A) · B + beta · C}, {@link Structure#FULL}, with B packed beforehand
     * ({@link #pack}, {@link #packTransposed}; {@code n} and the depth {@code k} are B's): bitwise the product of
     * {@link #matmul(boolean, int, int, int, float, float[], int, int, float[], int, int, float, float[], int, int)}
     * on B, without packing B again.
     */
    static void matmul(boolean transA, int m, float alpha, float[] a, int aOff, int lda, Packed b, float beta,
                       float[] c, int cOff, int ldc) {
        matmul(Structure.FULL, transA, m, alpha, a, aOff, lda, b, beta, c, cOff, ldc);
    }

    /**
     * {@code C[m×n] = alpha · op(A) · B + beta · C} with B packed beforehand and a triangular {@code structure}:
     * bitwise the product of
     * {@link #matmul(Structure, boolean, int, int, int, float, float[], int, int, float[], int, int, float, float[], int, int)}
     * on B.
     */
    static void matmul(Structure structure, boolean transA, int m, float alpha, float[] a, int aOff, int lda, Packed b,
                       float beta, float[] c, int cOff, int ldc) {
        int rowStep = transA ? 1 : lda;
        int depthStep = transA ? lda : 1;
        int full = 0;
        for (int s = 0, width; full + STRIPE <= b.n; s++, full += width) {
            width = stripeWidth(b.n - full);
            stripeRows(structure, m, b.k, full, width, alpha, a, aOff, rowStep, depthStep, b.panel(s), b.panelOffset(s),
                    beta, c, cOff, ldc);
        }
        // The rest block's column j − full holds B's column j.
        restColumns(structure, m, b.k, full, b.n, alpha, a, aOff, rowStep, depthStep, b.rest, -full, b.n - full,
                beta, c, cOff, ldc);
    }

    /**
     * The width of the stripe of B that starts {@code remaining ≥ STRIPE} columns before B's end: wide stripes while
     * they fit, then narrow ones.
     */
    private static int stripeWidth(int remaining) {
        return remaining >= WIDE_STRIPE ? WIDE_STRIPE : STRIPE;
    }

    /**
     * Whether a stripe of {@code width} columns of B (leading dimension {@code ldb}) is read where it lies: a wide
     * stripe that is B's whole rows is already laid out at the wide tiles' constant stride, and needs no copy (the
     * training call 2–4 % faster, with per-document states 9 %, measured in turns in one JVM).
     */
    private static boolean readsInPlace(int width, int ldb) {
        return WIDE_STRIPE != STRIPE && width == WIDE_STRIPE && ldb == WIDE_STRIPE;
    }

    /**
     * Columns {@code j … j+width−1} of C from the packed stripe {@code panel} of B ({@code width} {@link #STRIPE} or
     * {@link #WIDE_STRIPE}), in register tiles of rows.
     */
    private static void stripeRows(Structure structure, int m, int k, int j, int width, float alpha, float[] a,
                                   int aOff, int rowStep, int depthStep, float[] panel, int panelOff, float beta,
                                   float[] c, int cOff, int ldc) {
        int i = structure.lowerC() ? firstRowReaching(j, m) : 0;
        if (structure.lowerC() && width != STRIPE) {
            // The whole 6-row tiles above the wide stripe's right half reach only its left half: computed from a
            // narrow copy of that half, they skip the right half's tiles wholly above the diagonal, as narrow stripes
            // do (a third of what a triangle of 64 computes over one wide stripe). Every element still sums its
            // whole depth in order: the same bits.
            int upper = Math.min(m, (j + STRIPE) / 6 * 6);
            if (i < upper) {
                rowTiles(structure, i, upper, k, j, STRIPE, alpha, a, aOff, rowStep, depthStep,
                        leftHalf(k, panel, panelOff), 0, beta, c, cOff, ldc);
                i = upper;
            }
        }
        rowTiles(structure, i, m, k, j, width, alpha, a, aOff, rowStep, depthStep, panel, panelOff, beta, c, cOff,
                ldc);
    }

    /** Per-thread copy of a wide stripe's left half ({@link #stripeRows}). */
    private static final ThreadLocal<float[][]> LEFT_HALF = ThreadLocal.withInitial(() -> new float[1][0]);

    /** The first {@link #STRIPE} columns of the wide stripe {@code panel [k×WIDE_STRIPE]}, as a narrow panel. */
    private static float[] leftHalf(int k, float[] panel, int panelOff) {
        float[][] holder = LEFT_HALF.get();
        if (holder[0].length < k * STRIPE) {
            holder[0] = new float[k * STRIPE];
        }
        packStripe(k, STRIPE, panel, panelOff, WIDE_STRIPE, holder[0]);
        return holder[0];
    }

    /** Rows {@code i … m−1} of C over the stripe at column {@code j}, in register tiles ({@link #stripeRows}). */
    private static void rowTiles(Structure structure, int i, int m, int k, int j, int width, float alpha, float[] a,
                                 int aOff, int rowStep, int depthStep, float[] panel, int panelOff, float beta,
                                 float[] c, int cOff, int ldc) {
        boolean wide = width != STRIPE;
        boolean transposed = rowStep == 1 && depthStep == TRANSPOSED_LD;
        for (; i + 6 <= m; i += 6) {
            int from = structure.depthFrom(i);
            int to = structure.depthTo(i + 6, k);
            int at = cOff + i * ldc + j;
            if (wide && transposed) {
                tile6x4Transposed(from, to, alpha, a, aOff + i, panel, panelOff, beta, c, at, ldc);
            } else if (wide) {
                tile6x4(from, to, alpha, a, aOff + i * rowStep, rowStep, depthStep, panel, panelOff, beta, c, at, ldc);
            } else if (transposed) {
                tile6x2Transposed(from, to, alpha, a, aOff + i, panel, beta, c, at, ldc);
            } else if (depthStep == 1) {
                tile6x2Rows(from, to, alpha, a, aOff + i * rowStep, rowStep, panel, beta, c, at, ldc);
            } else {
                tile6x2(from, to, alpha, a, aOff + i * rowStep, rowStep, depthStep, panel, beta, c, at, ldc);
            }
        }
        // The rows past the 6-row tiles: one tile of 4, 3 or 2 rows (4 and a single row for 5), so that short
        // products (a document's rows of a chunk) do not fall to single rows, whose two dependency chains leave the
        // FMA units idle. A wide stripe covers 3 rows as 2 and 1 over the 3-row tile's depth range: the same terms.
        int rest = m - i;
        int tileRows = rest >= 4 ? 4 : rest;
        if (tileRows >= 2) {
            int from = structure.depthFrom(i);
            int to = structure.depthTo(i + tileRows, k);
            int at = cOff + i * ldc + j;
            int ai = aOff + i * rowStep;
            if (!wide) {
                switch (tileRows) {
                    case 4 -> tile4x2(from, to, alpha, a, ai, rowStep, depthStep, panel, beta, c, at, ldc);
                    case 3 -> tile3x2(from, to, alpha, a, ai, rowStep, depthStep, panel, beta, c, at, ldc);
                    default -> tile2x2(from, to, alpha, a, ai, rowStep, depthStep, panel, beta, c, at, ldc);
                }
            } else if (tileRows == 4) {
                tile4x4(from, to, alpha, a, ai, rowStep, depthStep, panel, panelOff, beta, c, at, ldc);
            } else {
                tile2x4(from, to, alpha, a, ai, rowStep, depthStep, panel, panelOff, beta, c, at, ldc);
                if (tileRows == 3) {
                    row(from, to, width, alpha, a, ai + 2 * rowStep, depthStep, panel, panelOff, beta, c,
                            at + 2 * ldc);
                }
            }
            i += tileRows;
        }
        for (; i < m; i++) {
            row(structure.depthFrom(i), structure.depthTo(i + 1, k), width, alpha, a, aOff + i * rowStep, depthStep,
                    panel, panelOff, beta, c, cOff + i * ldc + j);
        }
    }

    /** One row of C over a stripe of {@code width} columns, two vectors at a time, over depths {@code from … to−1}. */
    private static void row(int from, int to, int width, float alpha, float[] a, int aOff, int depthStep,
                            float[] panel, int panelOff, float beta, float[] c, int cOff) {
        for (int v = 0; v < width; v += 2 * LANES) {
            FloatVector acc0 = FloatVector.zero(SPECIES);
            FloatVector acc1 = FloatVector.zero(SPECIES);
            for (int p = from; p < to; p++) {
                FloatVector av = FloatVector.broadcast(SPECIES, a[aOff + p * depthStep]);
                acc0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * width + v).fma(av, acc0);
                acc1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * width + v + LANES).fma(av, acc1);
            }
            // Written out, like the tiles' stores.
            int at = cOff + v;
            acc0 = acc0.mul(alpha);
            acc1 = acc1.mul(alpha);
            if (beta != 0f) {
                acc0 = FloatVector.fromArray(SPECIES, c, at).fma(FloatVector.broadcast(SPECIES, beta), acc0);
                acc1 = FloatVector.fromArray(SPECIES, c, at + LANES).fma(FloatVector.broadcast(SPECIES, beta), acc1);
            }
            acc0.intoArray(c, at);
            acc1.intoArray(c, at + LANES);
        }
    }

    /**
     * Columns {@code j0 … n−1} of C (past the stripes), row by row, over the depth range of the row's tile in the
     * stripes: a skipped zero term could still turn an accumulator of −0 into +0, so every width adds the same terms
     * to an element. B's column j is {@code b[bOff + p·ldb + j]}.
     */
    private static void restColumns(Structure structure, int m, int k, int j0, int n, float alpha, float[] a, int aOff,
                                    int rowStep, int depthStep, float[] b, int bOff, int ldb, float beta, float[] c,
                                    int cOff, int ldc) {
        boolean lowerC = structure.lowerC();
        int j = j0;
        for (; j + LANES <= n; j += LANES) {
            for (int i = lowerC ? firstRowReaching(j, m) : 0; i < m; i++) {
                FloatVector acc = FloatVector.zero(SPECIES);
                for (int p = structure.depthFrom(tileStart(i, m)), end = structure.depthTo(tileEnd(i, m), k); p < end;
                     p++) {
                    FloatVector av = FloatVector.broadcast(SPECIES, a[aOff + i * rowStep + p * depthStep]);
                    acc = FloatVector.fromArray(SPECIES, b, bOff + p * ldb + j).fma(av, acc);
                }
                int at = cOff + i * ldc + j;
                acc = acc.mul(alpha);
                if (beta != 0f) {
                    acc = FloatVector.fromArray(SPECIES, c, at).fma(FloatVector.broadcast(SPECIES, beta), acc);
                }
                acc.intoArray(c, at);
            }
        }
        for (; j < n; j++) {
            for (int i = lowerC ? firstRowReaching(j, m) : 0; i < m; i++) {
                float acc = 0f;
                for (int p = structure.depthFrom(tileStart(i, m)), end = structure.depthTo(tileEnd(i, m), k); p < end;
                     p++) {
                    acc = Math.fma(a[aOff + i * rowStep + p * depthStep], b[bOff + p * ldb + j], acc);
                }
                int at = cOff + i * ldc + j;
                c[at] = beta == 0f ? alpha * acc : Math.fma(beta, c[at], alpha * acc);
            }
        }
    }

    /**
     * A matrix B {@code [k×n]} laid out once for several products
     * ({@link #matmul(boolean, int, float, float[], int, int, Packed, float, float[], int, int)}): its whole
     * column stripes ({@link #stripeWidth}) as the dense {@code [k×width]} panels the register tiles read, and the
     * columns past them as one dense {@code [k×(n mod STRIPE)]} block; or, where B's rows are exactly one wide stripe
     * ({@code n} and the leading dimension both {@link #WIDE_STRIPE}), B itself, by reference ({@link #inPlace}), which
     * must then not change while the packed form is in use. Reused, for any {@code k} and {@code n} up to its size.
     */
    static final class Packed {
        private final int maxK;
        private final int maxN;
        private final float[][] stripes;
        /** B itself when it is one wide stripe (its first row at {@link #inPlaceOffset}), else null. */
        private float[] inPlace;
        private int inPlaceOffset;
        /** The columns past the stripes, grown to the widest remainder packed. */
        private float[] rest = new float[0];
        private int k;
        private int n;

        Packed(int maxK, int maxN) {
            this.maxK = maxK;
            this.maxN = maxN;
            stripes = new float[maxN / STRIPE][];
        }

        /** Whether B of {@code k} rows and {@code n} columns fits. */
        boolean fits(int rows, int columns) {
            return rows <= maxK && columns <= maxN;
        }

        private void shape(int rows, int columns) {
            if (!fits(rows, columns)) {
                throw new IllegalArgumentException("packed B of " + rows + "×" + columns + " exceeds " + maxK + "×"
                        + maxN);
            }
            k = rows;
            n = columns;
            inPlace = null;
            for (int s = 0, j = 0, width; j + STRIPE <= columns; s++, j += width) {
                width = stripeWidth(columns - j);
                if (stripes[s] == null || stripes[s].length < maxK * width) {
                    stripes[s] = new float[maxK * width];
                }
            }
            int restFloats = rows * (columns % STRIPE);
            if (rest.length < restFloats) {
                rest = new float[restFloats];
            }
        }

        /** The array of stripe s (B itself when packed in place). */
        private float[] panel(int s) {
            return s == 0 && inPlace != null ? inPlace : stripes[s];
        }

        /** Where stripe s starts in {@link #panel}. */
        private int panelOffset(int s) {
            return s == 0 && inPlace != null ? inPlaceOffset : 0;
        }

        /**
         * {@code out[i] += Σ_p B[p,i] · other[p,i]} for every column i, a fused multiply-add per depth step in depth
         * order (elementwise over two matrices packed to the same shape).
         */
        void columnDotsInto(Packed other, float[] out) {
            if (other.k != k || other.n != n) {
                throw new IllegalArgumentException("packed shapes differ: " + k + "×" + n + " and " + other.k + "×"
                        + other.n);
            }
            int full = 0;
            for (int s = 0, width; full + STRIPE <= n; s++, full += width) {
                width = stripeWidth(n - full);
                float[] x = panel(s);
                float[] y = other.panel(s);
                int xOff = panelOffset(s);
                int yOff = other.panelOffset(s);
                for (int v = 0; v < width; v += 2 * LANES) {
                    // In registers over the depth, as out += x·y step by step would round: the same chain.
                    FloatVector acc0 = FloatVector.fromArray(SPECIES, out, full + v);
                    FloatVector acc1 = FloatVector.fromArray(SPECIES, out, full + v + LANES);
                    for (int p = 0; p < k; p++) {
                        int at = p * width + v;
                        acc0 = FloatVector.fromArray(SPECIES, x, xOff + at)
                                .fma(FloatVector.fromArray(SPECIES, y, yOff + at), acc0);
                        acc1 = FloatVector.fromArray(SPECIES, x, xOff + at + LANES)
                                .fma(FloatVector.fromArray(SPECIES, y, yOff + at + LANES), acc1);
                    }
                    acc0.intoArray(out, full + v);
                    acc1.intoArray(out, full + v + LANES);
                }
            }
            for (int p = 0, width = n - full; p < k; p++) {
                multiplyAdd(width, rest, p * width, other.rest, p * width, out, full);
            }
        }
    }

    /**
     * Packs {@code B [k×n]} (leading dimension {@code ldb}) into {@code out}: by reference when B is one wide stripe,
     * so B must not change while {@code out} is in use.
     */
    static void pack(int k, int n, float[] b, int bOff, int ldb, Packed out) {
        out.shape(k, n);
        if (readsInPlace(n, ldb)) {
            out.inPlace = b;
            out.inPlaceOffset = bOff;
            return;
        }
        int full = 0;
        for (int s = 0, width; full + STRIPE <= n; s++, full += width) {
            width = stripeWidth(n - full);
            packStripe(k, width, b, bOff + full, ldb, out.stripes[s]);
        }
        for (int p = 0, width = n - full; p < k; p++) {
            System.arraycopy(b, bOff + p * ldb + full, out.rest, p * width, width);
        }
    }

    /**
     * Packs {@code B = btᵀ [k×n]} into {@code out}, transposing on the way: {@code bt} holds {@code [n×k]} (leading
     * dimension {@code ldbt}), its row j being B's column j.
     */
    static void packTransposed(int k, int n, float[] bt, int btOff, int ldbt, Packed out) {
        out.shape(k, n);
        int full = 0;
        for (int s = 0, width; full + STRIPE <= n; s++, full += width) {
            width = stripeWidth(n - full);
            transpose(width, k, bt, btOff + full * ldbt, ldbt, out.stripes[s], width);
        }
        transpose(n - full, k, bt, btOff + full * ldbt, ldbt, out.rest, n - full);
    }

    /**
     * {@code n} rounded up to a whole number of 2-vector column tiles, at most {@code limit}: the width to
     * compute when the columns past {@code n} may take any value (never read, and backed by storage), so
     * that no column falls to the scalar tail.
     */
    static int paddedWidth(int n, int limit) {
        return Math.min(limit, (n + STRIPE - 1) / STRIPE * STRIPE);
    }

    /** Per-thread buffer for one packed stripe of B (the kernels are static and run on many threads). */
    private static final ThreadLocal<float[][]> PANEL = ThreadLocal.withInitial(() -> new float[1][0]);

    /** This thread's stripe buffer, room for {@code k} rows of the widest stripe. */
    private static float[] stripePanel(int k) {
        float[][] holder = PANEL.get();
        if (holder[0].length < k * WIDE_STRIPE) {
            holder[0] = new float[k * WIDE_STRIPE];
        }
        return holder[0];
    }

    /**
     * Copies the {@code [k×width]} stripe of B at {@code bOff} (leading dimension {@code ldb}) into the dense
     * {@code panel}. The tiles then index B with a constant stride ({@link #STRIPE} or {@link #WIDE_STRIPE}), which
     * lets C2 prove the loads in bounds once per loop instead of checking every one: 5–7 % faster on 64×64×64
     * products, copy included (timed in turns against reading B in place).
     */
    private static void packStripe(int k, int width, float[] b, int bOff, int ldb, float[] panel) {
        for (int p = 0; p < k; p++) {
            for (int v = 0; v < width; v += LANES) {
                FloatVector.fromArray(SPECIES, b, bOff + p * ldb + v).intoArray(panel, p * width + v);
            }
        }
    }

    /** The dense product: {@code matmul(Structure.FULL, …)}. */
    static void matmul(boolean transA, int m, int n, int k, float alpha, float[] a, int aOff, int lda, float[] b,
                       int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
        matmul(Structure.FULL, transA, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    /**
     * The first row of the register tile that holds row {@code i} of an {@code m}-row product in the stripes, whose
     * rows start at 0 (tiles of 6 rows, then one of the remaining 4, 3 or 2 rows, or 4 and a single row for 5, or a
     * single row; {@link Structure#LOWER_C} starts later, but its depth range does not depend on the rows).
     */
    private static int tileStart(int i, int m) {
        int sixes = m / 6 * 6;
        if (i < sixes) {
            return i / 6 * 6;
        }
        return m - sixes == 5 && i == m - 1 ? i : sixes;
    }

    /** One past the last row of the register tile that holds row {@code i} (see {@link #tileStart}). */
    private static int tileEnd(int i, int m) {
        int sixes = m / 6 * 6;
        if (i < sixes) {
            return i / 6 * 6 + 6;
        }
        return m - sixes == 5 && i < m - 1 ? sixes + 4 : m;
    }

    /**
     * For {@link Structure#LOWER_C}: the first row of a column tile starting at {@code column} that has
     * wanted entries, rounded down to a multiple of 6 (every 6-row tile before it is wholly above the diagonal).
     */
    private static int firstRowReaching(int column, int m) {
        return Math.min(m, column / 6 * 6);
    }

    private static void tile2x2(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, p * STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, p * STRIPE + LANES);
            int ap = aOff + p * depthStep;
            FloatVector a0 = FloatVector.broadcast(SPECIES, a[ap]);
            FloatVector a1 = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
            c00 = b0.fma(a0, c00);
            c01 = b1.fma(a0, c01);
            c10 = b0.fma(a1, c10);
            c11 = b1.fma(a1, c11);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
    }

    private static void tile3x2(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, p * STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, p * STRIPE + LANES);
            int ap = aOff + p * depthStep;
            FloatVector a0 = FloatVector.broadcast(SPECIES, a[ap]);
            FloatVector a1 = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
            FloatVector a2 = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
            c00 = b0.fma(a0, c00);
            c01 = b1.fma(a0, c01);
            c10 = b0.fma(a1, c10);
            c11 = b1.fma(a1, c11);
            c20 = b0.fma(a2, c20);
            c21 = b1.fma(a2, c21);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
    }

    private static void tile4x2(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, p * STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, p * STRIPE + LANES);
            int ap = aOff + p * depthStep;
            FloatVector a0 = FloatVector.broadcast(SPECIES, a[ap]);
            FloatVector a1 = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
            FloatVector a2 = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
            FloatVector a3 = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
            c00 = b0.fma(a0, c00);
            c01 = b1.fma(a0, c01);
            c10 = b0.fma(a1, c10);
            c11 = b1.fma(a1, c11);
            c20 = b0.fma(a2, c20);
            c21 = b1.fma(a2, c21);
            c30 = b0.fma(a3, c30);
            c31 = b1.fma(a3, c31);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
    }

    private static void tile6x2(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        FloatVector c40 = FloatVector.zero(SPECIES);
        FloatVector c41 = FloatVector.zero(SPECIES);
        FloatVector c50 = FloatVector.zero(SPECIES);
        FloatVector c51 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, p * STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, p * STRIPE + LANES);
            int ap = aOff + p * depthStep;
            FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(SPECIES, a[ap + 4 * rowStep]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(SPECIES, a[ap + 5 * rowStep]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        c40 = c40.mul(va);
        c41 = c41.mul(va);
        c50 = c50.mul(va);
        c51 = c51.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
            c40 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc).fma(vb, c40);
            c41 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + LANES).fma(vb, c41);
            c50 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc).fma(vb, c50);
            c51 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + LANES).fma(vb, c51);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
        c40.intoArray(c, cOff + 4 * ldc);
        c41.intoArray(c, cOff + 4 * ldc + LANES);
        c50.intoArray(c, cOff + 5 * ldc);
        c51.intoArray(c, cOff + 5 * ldc + LANES);
    }

    /**
     * {@link #tile6x2} for A's rows read along k (a unit depth step), as {@link #tile6x4}'s first loop: 64 × 32 × 64
     * in L1 154 GFLOP/s against 114 on AVX-512 (unchanged under AVX2). A method of its own: as a second loop in
     * tile6x2 it made C2 spill AVX2's registers (64 × 64 × 64 at 67 GFLOP/s against 74).
     */
    private static void tile6x2Rows(int from, int to, float alpha, float[] a, int aOff, int rowStep, float[] panel,
                                    float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        FloatVector c40 = FloatVector.zero(SPECIES);
        FloatVector c41 = FloatVector.zero(SPECIES);
        FloatVector c50 = FloatVector.zero(SPECIES);
        FloatVector c51 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, p * STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, p * STRIPE + LANES);
            int ap = aOff + p;
            FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(SPECIES, a[ap + 4 * rowStep]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(SPECIES, a[ap + 5 * rowStep]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        c40 = c40.mul(va);
        c41 = c41.mul(va);
        c50 = c50.mul(va);
        c51 = c51.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
            c40 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc).fma(vb, c40);
            c41 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + LANES).fma(vb, c41);
            c50 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc).fma(vb, c50);
            c51 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + LANES).fma(vb, c51);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
        c40.intoArray(c, cOff + 4 * ldc);
        c41.intoArray(c, cOff + 4 * ldc + LANES);
        c50.intoArray(c, cOff + 5 * ldc);
        c51.intoArray(c, cOff + 5 * ldc + LANES);
    }

    /** {@link #tile6x2} for a transposed A of {@link #TRANSPOSED_LD} columns, as {@link #tile6x4Transposed}. */
    private static void tile6x2Transposed(int from, int to, float alpha, float[] a, int aOff, float[] panel, float beta,
                                          float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        FloatVector c40 = FloatVector.zero(SPECIES);
        FloatVector c41 = FloatVector.zero(SPECIES);
        FloatVector c50 = FloatVector.zero(SPECIES);
        FloatVector c51 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, p * STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, p * STRIPE + LANES);
            int ap = aOff + p * TRANSPOSED_LD;
            FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(SPECIES, a[ap + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(SPECIES, a[ap + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(SPECIES, a[ap + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(SPECIES, a[ap + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(SPECIES, a[ap + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        c40 = c40.mul(va);
        c41 = c41.mul(va);
        c50 = c50.mul(va);
        c51 = c51.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
            c40 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc).fma(vb, c40);
            c41 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + LANES).fma(vb, c41);
            c50 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc).fma(vb, c50);
            c51 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + LANES).fma(vb, c51);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
        c40.intoArray(c, cOff + 4 * ldc);
        c41.intoArray(c, cOff + 4 * ldc + LANES);
        c50.intoArray(c, cOff + 5 * ldc);
        c51.intoArray(c, cOff + 5 * ldc + LANES);
    }

    // The wide tiles ({@link #WIDE_STRIPE}): the narrow ones' code over four vectors of B.

    private static void tile2x4(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, int panelOff, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c02 = FloatVector.zero(SPECIES);
        FloatVector c03 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c12 = FloatVector.zero(SPECIES);
        FloatVector c13 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
            FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
            FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
            int ap = aOff + p * depthStep;
            FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            c02 = b2.fma(av, c02);
            c03 = b3.fma(av, c03);
            av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            c12 = b2.fma(av, c12);
            c13 = b3.fma(av, c13);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c02 = c02.mul(va);
        c03 = c03.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c12 = c12.mul(va);
        c13 = c13.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c02 = FloatVector.fromArray(SPECIES, c, cOff + 2 * LANES).fma(vb, c02);
            c03 = FloatVector.fromArray(SPECIES, c, cOff + 3 * LANES).fma(vb, c03);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c12 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 2 * LANES).fma(vb, c12);
            c13 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 3 * LANES).fma(vb, c13);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c02.intoArray(c, cOff + 2 * LANES);
        c03.intoArray(c, cOff + 3 * LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c12.intoArray(c, cOff + ldc + 2 * LANES);
        c13.intoArray(c, cOff + ldc + 3 * LANES);
    }

    private static void tile4x4(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, int panelOff, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c02 = FloatVector.zero(SPECIES);
        FloatVector c03 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c12 = FloatVector.zero(SPECIES);
        FloatVector c13 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c22 = FloatVector.zero(SPECIES);
        FloatVector c23 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        FloatVector c32 = FloatVector.zero(SPECIES);
        FloatVector c33 = FloatVector.zero(SPECIES);
        // A constant depth step where it can be, as in tile6x4 and tile6x4Transposed (a tile this small leaves room in
        // the method for the three loops): 4 × 64 × 64 in L1 201–206 GFLOP/s against 117–119 (A transposed 201
        // against 115).
        if (depthStep == 1) {
            for (int p = from; p < to; p++) {
                FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
                FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
                FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
                FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
                int ap = aOff + p;
                FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                c02 = b2.fma(av, c02);
                c03 = b3.fma(av, c03);
                av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                c12 = b2.fma(av, c12);
                c13 = b3.fma(av, c13);
                av = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                c22 = b2.fma(av, c22);
                c23 = b3.fma(av, c23);
                av = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                c32 = b2.fma(av, c32);
                c33 = b3.fma(av, c33);
            }
        } else if (rowStep == 1 && depthStep == TRANSPOSED_LD) {
            for (int p = from; p < to; p++) {
                FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
                FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
                FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
                FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
                int ap = aOff + p * TRANSPOSED_LD;
                FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                c02 = b2.fma(av, c02);
                c03 = b3.fma(av, c03);
                av = FloatVector.broadcast(SPECIES, a[ap + 1]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                c12 = b2.fma(av, c12);
                c13 = b3.fma(av, c13);
                av = FloatVector.broadcast(SPECIES, a[ap + 2]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                c22 = b2.fma(av, c22);
                c23 = b3.fma(av, c23);
                av = FloatVector.broadcast(SPECIES, a[ap + 3]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                c32 = b2.fma(av, c32);
                c33 = b3.fma(av, c33);
            }
        } else {
            for (int p = from; p < to; p++) {
                FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
                FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
                FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
                FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
                int ap = aOff + p * depthStep;
                FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                c02 = b2.fma(av, c02);
                c03 = b3.fma(av, c03);
                av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                c12 = b2.fma(av, c12);
                c13 = b3.fma(av, c13);
                av = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                c22 = b2.fma(av, c22);
                c23 = b3.fma(av, c23);
                av = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                c32 = b2.fma(av, c32);
                c33 = b3.fma(av, c33);
            }
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c02 = c02.mul(va);
        c03 = c03.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c12 = c12.mul(va);
        c13 = c13.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c22 = c22.mul(va);
        c23 = c23.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        c32 = c32.mul(va);
        c33 = c33.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c02 = FloatVector.fromArray(SPECIES, c, cOff + 2 * LANES).fma(vb, c02);
            c03 = FloatVector.fromArray(SPECIES, c, cOff + 3 * LANES).fma(vb, c03);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c12 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 2 * LANES).fma(vb, c12);
            c13 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 3 * LANES).fma(vb, c13);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c22 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + 2 * LANES).fma(vb, c22);
            c23 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + 3 * LANES).fma(vb, c23);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
            c32 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + 2 * LANES).fma(vb, c32);
            c33 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + 3 * LANES).fma(vb, c33);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c02.intoArray(c, cOff + 2 * LANES);
        c03.intoArray(c, cOff + 3 * LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c12.intoArray(c, cOff + ldc + 2 * LANES);
        c13.intoArray(c, cOff + ldc + 3 * LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c22.intoArray(c, cOff + 2 * ldc + 2 * LANES);
        c23.intoArray(c, cOff + 2 * ldc + 3 * LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
        c32.intoArray(c, cOff + 3 * ldc + 2 * LANES);
        c33.intoArray(c, cOff + 3 * ldc + 3 * LANES);
    }

    private static void tile6x4(int from, int to, float alpha, float[] a, int aOff, int rowStep, int depthStep,
                                float[] panel, int panelOff, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c02 = FloatVector.zero(SPECIES);
        FloatVector c03 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c12 = FloatVector.zero(SPECIES);
        FloatVector c13 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c22 = FloatVector.zero(SPECIES);
        FloatVector c23 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        FloatVector c32 = FloatVector.zero(SPECIES);
        FloatVector c33 = FloatVector.zero(SPECIES);
        FloatVector c40 = FloatVector.zero(SPECIES);
        FloatVector c41 = FloatVector.zero(SPECIES);
        FloatVector c42 = FloatVector.zero(SPECIES);
        FloatVector c43 = FloatVector.zero(SPECIES);
        FloatVector c50 = FloatVector.zero(SPECIES);
        FloatVector c51 = FloatVector.zero(SPECIES);
        FloatVector c52 = FloatVector.zero(SPECIES);
        FloatVector c53 = FloatVector.zero(SPECIES);
        // A's rows read along k: a unit depth step, so that C2 proves A's loads in bounds once per loop rather than
        // checking each (with the step a variable it cannot): 1.2× the rate on 64×64×64 in L1 (212–221 against
        // 171–180 GFLOP/s on AVX-512). The same terms in the same order either way. (A third loop, for the transposed
        // A of tile6x4Transposed, made the method too large for C2 to compile.)
        if (depthStep == 1) {
            for (int p = from; p < to; p++) {
                FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
                FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
                FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
                FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
                int ap = aOff + p;
                FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                c02 = b2.fma(av, c02);
                c03 = b3.fma(av, c03);
                av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                c12 = b2.fma(av, c12);
                c13 = b3.fma(av, c13);
                av = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                c22 = b2.fma(av, c22);
                c23 = b3.fma(av, c23);
                av = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                c32 = b2.fma(av, c32);
                c33 = b3.fma(av, c33);
                av = FloatVector.broadcast(SPECIES, a[ap + 4 * rowStep]);
                c40 = b0.fma(av, c40);
                c41 = b1.fma(av, c41);
                c42 = b2.fma(av, c42);
                c43 = b3.fma(av, c43);
                av = FloatVector.broadcast(SPECIES, a[ap + 5 * rowStep]);
                c50 = b0.fma(av, c50);
                c51 = b1.fma(av, c51);
                c52 = b2.fma(av, c52);
                c53 = b3.fma(av, c53);
            }
        } else {
            for (int p = from; p < to; p++) {
                FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
                FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
                FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
                FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
                int ap = aOff + p * depthStep;
                FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                c02 = b2.fma(av, c02);
                c03 = b3.fma(av, c03);
                av = FloatVector.broadcast(SPECIES, a[ap + rowStep]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                c12 = b2.fma(av, c12);
                c13 = b3.fma(av, c13);
                av = FloatVector.broadcast(SPECIES, a[ap + 2 * rowStep]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                c22 = b2.fma(av, c22);
                c23 = b3.fma(av, c23);
                av = FloatVector.broadcast(SPECIES, a[ap + 3 * rowStep]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                c32 = b2.fma(av, c32);
                c33 = b3.fma(av, c33);
                av = FloatVector.broadcast(SPECIES, a[ap + 4 * rowStep]);
                c40 = b0.fma(av, c40);
                c41 = b1.fma(av, c41);
                c42 = b2.fma(av, c42);
                c43 = b3.fma(av, c43);
                av = FloatVector.broadcast(SPECIES, a[ap + 5 * rowStep]);
                c50 = b0.fma(av, c50);
                c51 = b1.fma(av, c51);
                c52 = b2.fma(av, c52);
                c53 = b3.fma(av, c53);
            }
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c02 = c02.mul(va);
        c03 = c03.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c12 = c12.mul(va);
        c13 = c13.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c22 = c22.mul(va);
        c23 = c23.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        c32 = c32.mul(va);
        c33 = c33.mul(va);
        c40 = c40.mul(va);
        c41 = c41.mul(va);
        c42 = c42.mul(va);
        c43 = c43.mul(va);
        c50 = c50.mul(va);
        c51 = c51.mul(va);
        c52 = c52.mul(va);
        c53 = c53.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c02 = FloatVector.fromArray(SPECIES, c, cOff + 2 * LANES).fma(vb, c02);
            c03 = FloatVector.fromArray(SPECIES, c, cOff + 3 * LANES).fma(vb, c03);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c12 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 2 * LANES).fma(vb, c12);
            c13 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 3 * LANES).fma(vb, c13);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c22 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + 2 * LANES).fma(vb, c22);
            c23 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + 3 * LANES).fma(vb, c23);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
            c32 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + 2 * LANES).fma(vb, c32);
            c33 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + 3 * LANES).fma(vb, c33);
            c40 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc).fma(vb, c40);
            c41 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + LANES).fma(vb, c41);
            c42 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + 2 * LANES).fma(vb, c42);
            c43 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + 3 * LANES).fma(vb, c43);
            c50 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc).fma(vb, c50);
            c51 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + LANES).fma(vb, c51);
            c52 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + 2 * LANES).fma(vb, c52);
            c53 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + 3 * LANES).fma(vb, c53);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c02.intoArray(c, cOff + 2 * LANES);
        c03.intoArray(c, cOff + 3 * LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c12.intoArray(c, cOff + ldc + 2 * LANES);
        c13.intoArray(c, cOff + ldc + 3 * LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c22.intoArray(c, cOff + 2 * ldc + 2 * LANES);
        c23.intoArray(c, cOff + 2 * ldc + 3 * LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
        c32.intoArray(c, cOff + 3 * ldc + 2 * LANES);
        c33.intoArray(c, cOff + 3 * ldc + 3 * LANES);
        c40.intoArray(c, cOff + 4 * ldc);
        c41.intoArray(c, cOff + 4 * ldc + LANES);
        c42.intoArray(c, cOff + 4 * ldc + 2 * LANES);
        c43.intoArray(c, cOff + 4 * ldc + 3 * LANES);
        c50.intoArray(c, cOff + 5 * ldc);
        c51.intoArray(c, cOff + 5 * ldc + LANES);
        c52.intoArray(c, cOff + 5 * ldc + 2 * LANES);
        c53.intoArray(c, cOff + 5 * ldc + 3 * LANES);
    }

    /**
     * {@link #tile6x4} for a transposed A of {@link #TRANSPOSED_LD} columns (the tile's rows adjacent, its depths
     * {@code TRANSPOSED_LD} apart): a constant depth step, so that C2 proves A's loads in bounds once per loop
     * (64×64×64 with A transposed in L1: 211 against 173 GFLOP/s on AVX-512). The same terms in the same order.
     */
    private static void tile6x4Transposed(int from, int to, float alpha, float[] a, int aOff, float[] panel,
                                          int panelOff, float beta, float[] c, int cOff, int ldc) {
        FloatVector c00 = FloatVector.zero(SPECIES);
        FloatVector c01 = FloatVector.zero(SPECIES);
        FloatVector c02 = FloatVector.zero(SPECIES);
        FloatVector c03 = FloatVector.zero(SPECIES);
        FloatVector c10 = FloatVector.zero(SPECIES);
        FloatVector c11 = FloatVector.zero(SPECIES);
        FloatVector c12 = FloatVector.zero(SPECIES);
        FloatVector c13 = FloatVector.zero(SPECIES);
        FloatVector c20 = FloatVector.zero(SPECIES);
        FloatVector c21 = FloatVector.zero(SPECIES);
        FloatVector c22 = FloatVector.zero(SPECIES);
        FloatVector c23 = FloatVector.zero(SPECIES);
        FloatVector c30 = FloatVector.zero(SPECIES);
        FloatVector c31 = FloatVector.zero(SPECIES);
        FloatVector c32 = FloatVector.zero(SPECIES);
        FloatVector c33 = FloatVector.zero(SPECIES);
        FloatVector c40 = FloatVector.zero(SPECIES);
        FloatVector c41 = FloatVector.zero(SPECIES);
        FloatVector c42 = FloatVector.zero(SPECIES);
        FloatVector c43 = FloatVector.zero(SPECIES);
        FloatVector c50 = FloatVector.zero(SPECIES);
        FloatVector c51 = FloatVector.zero(SPECIES);
        FloatVector c52 = FloatVector.zero(SPECIES);
        FloatVector c53 = FloatVector.zero(SPECIES);
        for (int p = from; p < to; p++) {
            FloatVector b0 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE);
            FloatVector b1 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + LANES);
            FloatVector b2 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 2 * LANES);
            FloatVector b3 = FloatVector.fromArray(SPECIES, panel, panelOff + p * WIDE_STRIPE + 3 * LANES);
            int ap = aOff + p * TRANSPOSED_LD;
            FloatVector av = FloatVector.broadcast(SPECIES, a[ap]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            c02 = b2.fma(av, c02);
            c03 = b3.fma(av, c03);
            av = FloatVector.broadcast(SPECIES, a[ap + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            c12 = b2.fma(av, c12);
            c13 = b3.fma(av, c13);
            av = FloatVector.broadcast(SPECIES, a[ap + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            c22 = b2.fma(av, c22);
            c23 = b3.fma(av, c23);
            av = FloatVector.broadcast(SPECIES, a[ap + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            c32 = b2.fma(av, c32);
            c33 = b3.fma(av, c33);
            av = FloatVector.broadcast(SPECIES, a[ap + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            c42 = b2.fma(av, c42);
            c43 = b3.fma(av, c43);
            av = FloatVector.broadcast(SPECIES, a[ap + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
            c52 = b2.fma(av, c52);
            c53 = b3.fma(av, c53);
        }
        // Written out rather than a helper taking vectors: a call C2 declines to inline boxes every vector.
        FloatVector va = FloatVector.broadcast(SPECIES, alpha);
        c00 = c00.mul(va);
        c01 = c01.mul(va);
        c02 = c02.mul(va);
        c03 = c03.mul(va);
        c10 = c10.mul(va);
        c11 = c11.mul(va);
        c12 = c12.mul(va);
        c13 = c13.mul(va);
        c20 = c20.mul(va);
        c21 = c21.mul(va);
        c22 = c22.mul(va);
        c23 = c23.mul(va);
        c30 = c30.mul(va);
        c31 = c31.mul(va);
        c32 = c32.mul(va);
        c33 = c33.mul(va);
        c40 = c40.mul(va);
        c41 = c41.mul(va);
        c42 = c42.mul(va);
        c43 = c43.mul(va);
        c50 = c50.mul(va);
        c51 = c51.mul(va);
        c52 = c52.mul(va);
        c53 = c53.mul(va);
        if (beta != 0f) {
            FloatVector vb = FloatVector.broadcast(SPECIES, beta);
            c00 = FloatVector.fromArray(SPECIES, c, cOff).fma(vb, c00);
            c01 = FloatVector.fromArray(SPECIES, c, cOff + LANES).fma(vb, c01);
            c02 = FloatVector.fromArray(SPECIES, c, cOff + 2 * LANES).fma(vb, c02);
            c03 = FloatVector.fromArray(SPECIES, c, cOff + 3 * LANES).fma(vb, c03);
            c10 = FloatVector.fromArray(SPECIES, c, cOff + ldc).fma(vb, c10);
            c11 = FloatVector.fromArray(SPECIES, c, cOff + ldc + LANES).fma(vb, c11);
            c12 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 2 * LANES).fma(vb, c12);
            c13 = FloatVector.fromArray(SPECIES, c, cOff + ldc + 3 * LANES).fma(vb, c13);
            c20 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc).fma(vb, c20);
            c21 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + LANES).fma(vb, c21);
            c22 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + 2 * LANES).fma(vb, c22);
            c23 = FloatVector.fromArray(SPECIES, c, cOff + 2 * ldc + 3 * LANES).fma(vb, c23);
            c30 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc).fma(vb, c30);
            c31 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + LANES).fma(vb, c31);
            c32 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + 2 * LANES).fma(vb, c32);
            c33 = FloatVector.fromArray(SPECIES, c, cOff + 3 * ldc + 3 * LANES).fma(vb, c33);
            c40 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc).fma(vb, c40);
            c41 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + LANES).fma(vb, c41);
            c42 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + 2 * LANES).fma(vb, c42);
            c43 = FloatVector.fromArray(SPECIES, c, cOff + 4 * ldc + 3 * LANES).fma(vb, c43);
            c50 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc).fma(vb, c50);
            c51 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + LANES).fma(vb, c51);
            c52 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + 2 * LANES).fma(vb, c52);
            c53 = FloatVector.fromArray(SPECIES, c, cOff + 5 * ldc + 3 * LANES).fma(vb, c53);
        }
        c00.intoArray(c, cOff);
        c01.intoArray(c, cOff + LANES);
        c02.intoArray(c, cOff + 2 * LANES);
        c03.intoArray(c, cOff + 3 * LANES);
        c10.intoArray(c, cOff + ldc);
        c11.intoArray(c, cOff + ldc + LANES);
        c12.intoArray(c, cOff + ldc + 2 * LANES);
        c13.intoArray(c, cOff + ldc + 3 * LANES);
        c20.intoArray(c, cOff + 2 * ldc);
        c21.intoArray(c, cOff + 2 * ldc + LANES);
        c22.intoArray(c, cOff + 2 * ldc + 2 * LANES);
        c23.intoArray(c, cOff + 2 * ldc + 3 * LANES);
        c30.intoArray(c, cOff + 3 * ldc);
        c31.intoArray(c, cOff + 3 * ldc + LANES);
        c32.intoArray(c, cOff + 3 * ldc + 2 * LANES);
        c33.intoArray(c, cOff + 3 * ldc + 3 * LANES);
        c40.intoArray(c, cOff + 4 * ldc);
        c41.intoArray(c, cOff + 4 * ldc + LANES);
        c42.intoArray(c, cOff + 4 * ldc + 2 * LANES);
        c43.intoArray(c, cOff + 4 * ldc + 3 * LANES);
        c50.intoArray(c, cOff + 5 * ldc);
        c51.intoArray(c, cOff + 5 * ldc + LANES);
        c52.intoArray(c, cOff + 5 * ldc + 2 * LANES);
        c53.intoArray(c, cOff + 5 * ldc + 3 * LANES);
    }

    /**
     * {@code C[m×n] = alpha · A · Bᵀ + beta · C} with B stored {@code [n×k]}: B is packed transposed into
     * {@code scratch} (room for {@code k × n}) and multiplied from there, one copy of B instead of a transpose and a
     * pack.
     */
    static void matmulTransB(Structure structure, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
                             float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc, Packed scratch) {
        packTransposed(k, n, b, bOff, ldb, scratch);
        matmul(structure, false, m, alpha, a, aOff, lda, scratch, beta, c, cOff, ldc);
    }

    /**
     * {@code out[d·ldOut + c] = m[mOff + c·ld + d]}: the {@code [rows×cols]} block of {@code m} (leading dimension
     * {@code ld}) transposed into a {@code [cols×rows]} block of rows {@code ldOut ≥ rows} floats apart.
     */
    private static void transpose(int rows, int cols, float[] m, int mOff, int ld, float[] out, int ldOut) {
        int wholeRows = 0;
        int wholeCols = 0;
        if (LANES == 16) {
            // 16 × 16 blocks in registers (a copy: any width gives the same bits; only 16-float vectors have it).
            wholeRows = rows / 16 * 16;
            wholeCols = cols / 16 * 16;
            for (int c = 0; c < wholeRows; c += 16) {
                for (int d = 0; d < wholeCols; d += 16) {
                    transposeBlock16(m, mOff + c * ld + d, ld, out, d * ldOut + c, ldOut);
                }
            }
        }
        // The rest (all of it below 16 lanes): the columns past the blocks of the block rows, then the rows past them.
        transposeScalar(wholeRows, cols - wholeCols, m, mOff + wholeCols, ld, out, wholeCols * ldOut, ldOut);
        transposeScalar(rows - wholeRows, cols, m, mOff + wholeRows * ld, ld, out, wholeRows, ldOut);
    }

    /** {@code out[outOff + d·ldOut + c] = m[mOff + c·ld + d]}, element by element. */
    private static void transposeScalar(int rows, int cols, float[] m, int mOff, int ld, float[] out, int outOff,
                                        int ldOut) {
        // Four source rows at a time: four sequential reads and four adjacent writes per column, rather than one
        // write a row apart per element (the one-row loop was a tenth of the op's time).
        int c = 0;
        for (; c + 4 <= rows; c += 4) {
            int m0 = mOff + c * ld;
            int m1 = m0 + ld;
            int m2 = m1 + ld;
            int m3 = m2 + ld;
            for (int d = 0, o = outOff + c; d < cols; d++, o += ldOut) {
                out[o] = m[m0 + d];
                out[o + 1] = m[m1 + d];
                out[o + 2] = m[m2 + d];
                out[o + 3] = m[m3 + d];
            }
        }
        for (; c < rows; c++) {
            for (int d = 0; d < cols; d++) {
                out[outOff + d * ldOut + c] = m[mOff + c * ld + d];
            }
        }
    }

    /**
     * The lane moves of {@link #transposeBlock16}, stage j (j = 0 … 3, h = 2^j), which swaps bit j of the row and the
     * column index between the rows of each pair (lower row i, upper row i + h): the lower row keeps its lanes whose
     * bit j is clear ({@code BIT_SET[j]} the others) and takes lane l − h of the upper row into lane l where it is set
     * ({@code DOWN[j]}); the upper row keeps its lanes whose bit j is set and takes lane l + h of the lower row where
     * it is clear ({@code UP[j]}). One single-vector permute and one blend a row: a two-vector rearrange cost two
     * permutes and a blend. Made only with 16-float vectors.
     */
    @SuppressWarnings("unchecked") // generic arrays of shuffles and masks, filled below
    private static final VectorShuffle<Float>[] DOWN = new VectorShuffle[4];
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Float>[] UP = new VectorShuffle[4];
    @SuppressWarnings("unchecked")
    private static final VectorMask<Float>[] BIT_SET = new VectorMask[4];

    static {
        if (LANES == 16) {
            for (int j = 0; j < 4; j++) {
                int h = 1 << j;
                int[] down = new int[16];
                int[] up = new int[16];
                boolean[] set = new boolean[16];
                for (int l = 0; l < 16; l++) {
                    down[l] = (l - h) & 15; // read only where bit j is set, l − h ≥ 0 there
                    up[l] = (l + h) & 15; // read only where bit j is clear, l + h < 16 there
                    set[l] = (l & h) != 0;
                }
                DOWN[j] = VectorShuffle.fromArray(SPECIES, down, 0);
                UP[j] = VectorShuffle.fromArray(SPECIES, up, 0);
                BIT_SET[j] = VectorMask.fromArray(SPECIES, set, 0);
            }
        }
    }

    /** One 16 × 16 block of {@link #transpose} in registers (written out: a vector array would box every vector). */
    private static void transposeBlock16(float[] m, int mOff, int ld, float[] out, int outOff, int ldOut) {
        FloatVector r0 = FloatVector.fromArray(SPECIES, m, mOff + 0 * ld);
        FloatVector r1 = FloatVector.fromArray(SPECIES, m, mOff + 1 * ld);
        FloatVector r2 = FloatVector.fromArray(SPECIES, m, mOff + 2 * ld);
        FloatVector r3 = FloatVector.fromArray(SPECIES, m, mOff + 3 * ld);
        FloatVector r4 = FloatVector.fromArray(SPECIES, m, mOff + 4 * ld);
        FloatVector r5 = FloatVector.fromArray(SPECIES, m, mOff + 5 * ld);
        FloatVector r6 = FloatVector.fromArray(SPECIES, m, mOff + 6 * ld);
        FloatVector r7 = FloatVector.fromArray(SPECIES, m, mOff + 7 * ld);
        FloatVector r8 = FloatVector.fromArray(SPECIES, m, mOff + 8 * ld);
        FloatVector r9 = FloatVector.fromArray(SPECIES, m, mOff + 9 * ld);
        FloatVector r10 = FloatVector.fromArray(SPECIES, m, mOff + 10 * ld);
        FloatVector r11 = FloatVector.fromArray(SPECIES, m, mOff + 11 * ld);
        FloatVector r12 = FloatVector.fromArray(SPECIES, m, mOff + 12 * ld);
        FloatVector r13 = FloatVector.fromArray(SPECIES, m, mOff + 13 * ld);
        FloatVector r14 = FloatVector.fromArray(SPECIES, m, mOff + 14 * ld);
        FloatVector r15 = FloatVector.fromArray(SPECIES, m, mOff + 15 * ld);
        VectorShuffle<Float> down0 = DOWN[0];
        VectorShuffle<Float> up0 = UP[0];
        VectorMask<Float> set0 = BIT_SET[0];
        FloatVector t;
        t = r0.blend(r1.rearrange(down0), set0);
        r1 = r0.rearrange(up0).blend(r1, set0);
        r0 = t;
        t = r2.blend(r3.rearrange(down0), set0);
        r3 = r2.rearrange(up0).blend(r3, set0);
        r2 = t;
        t = r4.blend(r5.rearrange(down0), set0);
        r5 = r4.rearrange(up0).blend(r5, set0);
        r4 = t;
        t = r6.blend(r7.rearrange(down0), set0);
        r7 = r6.rearrange(up0).blend(r7, set0);
        r6 = t;
        t = r8.blend(r9.rearrange(down0), set0);
        r9 = r8.rearrange(up0).blend(r9, set0);
        r8 = t;
        t = r10.blend(r11.rearrange(down0), set0);
        r11 = r10.rearrange(up0).blend(r11, set0);
        r10 = t;
        t = r12.blend(r13.rearrange(down0), set0);
        r13 = r12.rearrange(up0).blend(r13, set0);
        r12 = t;
        t = r14.blend(r15.rearrange(down0), set0);
        r15 = r14.rearrange(up0).blend(r15, set0);
        r14 = t;
        VectorShuffle<Float> down1 = DOWN[1];
        VectorShuffle<Float> up1 = UP[1];
        VectorMask<Float> set1 = BIT_SET[1];
        t = r0.blend(r2.rearrange(down1), set1);
        r2 = r0.rearrange(up1).blend(r2, set1);
        r0 = t;
        t = r1.blend(r3.rearrange(down1), set1);
        r3 = r1.rearrange(up1).blend(r3, set1);
        r1 = t;
        t = r4.blend(r6.rearrange(down1), set1);
        r6 = r4.rearrange(up1).blend(r6, set1);
        r4 = t;
        t = r5.blend(r7.rearrange(down1), set1);
        r7 = r5.rearrange(up1).blend(r7, set1);
        r5 = t;
        t = r8.blend(r10.rearrange(down1), set1);
        r10 = r8.rearrange(up1).blend(r10, set1);
        r8 = t;
        t = r9.blend(r11.rearrange(down1), set1);
        r11 = r9.rearrange(up1).blend(r11, set1);
        r9 = t;
        t = r12.blend(r14.rearrange(down1), set1);
        r14 = r12.rearrange(up1).blend(r14, set1);
        r12 = t;
        t = r13.blend(r15.rearrange(down1), set1);
        r15 = r13.rearrange(up1).blend(r15, set1);
        r13 = t;
        VectorShuffle<Float> down2 = DOWN[2];
        VectorShuffle<Float> up2 = UP[2];
        VectorMask<Float> set2 = BIT_SET[2];
        t = r0.blend(r4.rearrange(down2), set2);
        r4 = r0.rearrange(up2).blend(r4, set2);
        r0 = t;
        t = r1.blend(r5.rearrange(down2), set2);
        r5 = r1.rearrange(up2).blend(r5, set2);
        r1 = t;
        t = r2.blend(r6.rearrange(down2), set2);
        r6 = r2.rearrange(up2).blend(r6, set2);
        r2 = t;
        t = r3.blend(r7.rearrange(down2), set2);
        r7 = r3.rearrange(up2).blend(r7, set2);
        r3 = t;
        t = r8.blend(r12.rearrange(down2), set2);
        r12 = r8.rearrange(up2).blend(r12, set2);
        r8 = t;
        t = r9.blend(r13.rearrange(down2), set2);
        r13 = r9.rearrange(up2).blend(r13, set2);
        r9 = t;
        t = r10.blend(r14.rearrange(down2), set2);
        r14 = r10.rearrange(up2).blend(r14, set2);
        r10 = t;
        t = r11.blend(r15.rearrange(down2), set2);
        r15 = r11.rearrange(up2).blend(r15, set2);
        r11 = t;
        VectorShuffle<Float> down3 = DOWN[3];
        VectorShuffle<Float> up3 = UP[3];
        VectorMask<Float> set3 = BIT_SET[3];
        t = r0.blend(r8.rearrange(down3), set3);
        r8 = r0.rearrange(up3).blend(r8, set3);
        r0 = t;
        t = r1.blend(r9.rearrange(down3), set3);
        r9 = r1.rearrange(up3).blend(r9, set3);
        r1 = t;
        t = r2.blend(r10.rearrange(down3), set3);
        r10 = r2.rearrange(up3).blend(r10, set3);
        r2 = t;
        t = r3.blend(r11.rearrange(down3), set3);
        r11 = r3.rearrange(up3).blend(r11, set3);
        r3 = t;
        t = r4.blend(r12.rearrange(down3), set3);
        r12 = r4.rearrange(up3).blend(r12, set3);
        r4 = t;
        t = r5.blend(r13.rearrange(down3), set3);
        r13 = r5.rearrange(up3).blend(r13, set3);
        r5 = t;
        t = r6.blend(r14.rearrange(down3), set3);
        r14 = r6.rearrange(up3).blend(r14, set3);
        r6 = t;
        t = r7.blend(r15.rearrange(down3), set3);
        r15 = r7.rearrange(up3).blend(r15, set3);
        r7 = t;
        r0.intoArray(out, outOff + 0 * ldOut);
        r1.intoArray(out, outOff + 1 * ldOut);
        r2.intoArray(out, outOff + 2 * ldOut);
        r3.intoArray(out, outOff + 3 * ldOut);
        r4.intoArray(out, outOff + 4 * ldOut);
        r5.intoArray(out, outOff + 5 * ldOut);
        r6.intoArray(out, outOff + 6 * ldOut);
        r7.intoArray(out, outOff + 7 * ldOut);
        r8.intoArray(out, outOff + 8 * ldOut);
        r9.intoArray(out, outOff + 9 * ldOut);
        r10.intoArray(out, outOff + 10 * ldOut);
        r11.intoArray(out, outOff + 11 * ldOut);
        r12.intoArray(out, outOff + 12 * ldOut);
        r13.intoArray(out, outOff + 13 * ldOut);
        r14.intoArray(out, outOff + 14 * ldOut);
        r15.intoArray(out, outOff + 15 * ldOut);
    }
}
