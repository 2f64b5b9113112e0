package io.kdapack.core.kda;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The decayed pair products of one chunk, {@code M[r,c] = Σ_d x_r[d] y_c[d] exp(Γ_r[d] − Γ_c[d])} for
 * {@code c ≤ r}, for {@code Aqk} (x = q, y = k) and {@code P} (x = y = k, strictly lower), and their
 * backward. Scratch of one task (not thread-safe).
 *
 * <p>Where the gate cumsum Γ, restarted at each document's first row, stays within {@link #FACTOR_RANGE} of 0 over
 * the whole chunk (every row's {@code exp(Γ)} escaped the exponential's cut), the chunk's start is the anchor of all
 * its pairs: {@code exp(Γ_r − Γ_c) = exp(Γ_r)·exp(−Γ_c)} for two rows of one document, so {@code M} is the product
 * {@code (x ⊙ exp(Γ)) · (y ⊙ exp(−Γ))ᵀ} masked to its lower triangle, whose left factors are the chunk's own
 * {@code Qg} and {@code Kg} ({@link Rows}): only the column factors are formed here. That holds for mild gates and for
 * short documents (a lower-bound gate of −0.01 stays within it over any chunk); else the chunk falls back to blocks.
 *
 * <p>The chunk is cut into blocks of {@value #BLOCK} rows. For the columns before a block, whose first row
 * {@code a} serves as anchor, {@code exp(Γ_r − Γ_c) = exp(Γ_r − Γ_a)·exp(Γ_a − Γ_c)} with both factors
 * exponents ≤ 0 (sums of gates between the rows), and the block is a matrix product
 * {@code (x ⊙ exp(Γ − Γ_a)) · (y ⊙ exp(Γ_a − Γ))ᵀ}. Backward uses
 * {@code dx_r = Σ_c dM[r,c] y_c ⊙ exp(Γ_r − Γ_c)}, {@code dy_c = Σ_r dM[r,c] x_r ⊙ exp(Γ_r − Γ_c)},
 * {@code dΓ_r += x_r ⊙ dx_r}, {@code dΓ_c −= y_c ⊙ dy_c}; the anchor cancels out of all of them. When the
 * decay inside a block stays within {@link #FACTOR_RANGE}, its diagonal block uses the same anchor (column
 * factors {@code exp(Γ_a − Γ_c) ≥ 1}, still finite) and joins the product, masked to its lower triangle. Where
 * the gates decay more strongly the block is made shorter, halved down to {@value #MIN_BLOCK} rows
 * ({@link #blockRows}), and the next block starts where it ends; a block of {@value #MIN_BLOCK} rows still out of
 * range has its diagonal block formed pair by pair as a running sum of gates from row r down to column c: the
 * pair-by-pair exponentials are only paid where the gates fall by more than {@value #FACTOR_RANGE} within
 * {@value #MIN_BLOCK} rows.
 */
final class PairwiseDecay {

    static final int BLOCK = 32;
    /** The shortest block that strong decay makes ({@link #blockRows}). */
    static final int MIN_BLOCK = 8;
    /**
     * The columns a block skips before its rows' documents start ({@link #firstColumn}) come in whole multiples of
     * this, a multiple of every width's column tile ({@code 2·lanes}, at most 32): which columns are computed then
     * depends on the documents alone, not on the vector width.
     */
    static final int COLUMN_GRAIN = 32;
    /**
     * The largest {@code |Γ_r − Γ_a|} inside a block for which the diagonal block is factored: {@code exp(±64)}
     * stays a normal float far from the ends of the range (±87.3), so both factors and their products with q and
     * k keep full relative precision; and the row factors {@code exp(Γ_r − Γ_a) ≥ e^−64} of a factored block, which
     * its column factors (up to {@code e^64}) multiply back, never meet the exponential's cut
     * ({@link ChunkMath#EXP_CUTOFF}), which may only zero a factor that nothing larger multiplies back.
     */
    static final float FACTOR_RANGE = -ChunkMath.EXP_CUTOFF;
    /**
     * The lower-triangular structure of a block's pair gradients from its first column {@code c0}, by
     * {@code a − c0} ({@code [b, n]}, zero past column {@code i + a − c0} in row i), and of their transposes.
     */
    private static final ChunkMath.Structure[] ROWS = new ChunkMath.Structure[KdaChunk.SIZE + 1];
    private static final ChunkMath.Structure[] COLUMNS = new ChunkMath.Structure[KdaChunk.SIZE + 1];

    static {
        for (int shift = 0; shift <= KdaChunk.SIZE; shift++) {
            ROWS[shift] = ChunkMath.Structure.lowerA(shift);
            COLUMNS[shift] = ChunkMath.Structure.upperA(shift);
        }
    }

    private static final VectorSpecies<Float> SPECIES = ChunkMath.SPECIES;
    private static final int LANES = SPECIES.length();
    private static final int SIZE = KdaChunk.SIZE;

    private final int kd;
    private final float[] run;
    private final float[] rowDecay;
    private final float[] colDecay;
    private final float[] qRow;
    private final float[] kRow;
    private final float[] kCol;
    private final float[] dqRow;
    private final float[] dkRow;
    private final float[] dkCol;
    private final float[] e;
    /** The decayed columns {@code kColᵀ} packed as the right operand of both pair products. */
    private final ChunkMath.Packed columns;

    PairwiseDecay(int keyDim) {
        kd = keyDim;
        run = new float[kd];
        rowDecay = new float[BLOCK * kd];
        colDecay = new float[SIZE * kd];
        qRow = new float[BLOCK * kd];
        kRow = new float[BLOCK * kd];
        kCol = new float[SIZE * kd];
        dqRow = new float[SIZE * kd];
        dkRow = new float[SIZE * kd];
        dkCol = new float[SIZE * kd];
        e = new float[kd];
        columns = new ChunkMath.Packed(kd, SIZE);
    }

    /**
     * Fills {@code aQK[r·64 + c]} for {@code c ≤ r} and {@code pKK[r·64 + c]} for {@code c < r} for the chunk of rows
     * {@code first … first+len−1} of {@code q, k, g [L,K]} laid over the documents {@code docs}, zero for the pairs of
     * rows of different documents ({@code c < docs.rowStart[r]}) and above the diagonal up to column len (diagonal
     * included for {@code pKK}): {@code Aqk} enters products as a full matrix. {@code rows} are the chunk's decayed
     * rows.
     */
    void forward(float[] q, float[] k, float[] g, int first, int len, KdaChunk.Documents docs, Rows rows, float[] aQK,
                 float[] pKK) {
        int[] rowStart = docs.rowStart;
        if (inRange(rows.prefix(), len)) {
            chunkColumns(k, g, first, len, rowStart);
            int width = ChunkMath.paddedWidth(len, SIZE);
            ChunkMath.packTransposed(kd, width, kCol, 0, kd, columns);
            ChunkMath.matmul(ChunkMath.Structure.LOWER_C, false, len, 1f, rows.qg(), 0, kd, columns, 0f, aQK, 0, SIZE);
            ChunkMath.matmul(ChunkMath.Structure.LOWER_C, false, len, 1f, rows.kg(), 0, kd, columns, 0f, pKK, 0,
                    SIZE);
        } else {
            for (int a = 0, b; a < len; a += b) {
                b = blockRows(g, first, a, len);
                forwardBlock(q, k, g, first, a, b, rowStart, aQK, pKK);
            }
        }
        for (int r = 0; r < len; r++) {
            // The pairs across a document boundary (products of finite factors) and above the diagonal (products, or
            // what earlier chunks left), masked before any use.
            Arrays.fill(aQK, r * SIZE, r * SIZE + rowStart[r], 0f);
            Arrays.fill(aQK, r * SIZE + r + 1, r * SIZE + len, 0f);
            Arrays.fill(pKK, r * SIZE, r * SIZE + rowStart[r], 0f);
            Arrays.fill(pKK, r * SIZE + r, r * SIZE + len, 0f);
        }
    }

    /**
     * The rows of the block at {@code a}: {@value #BLOCK} (or the chunk's rest), halved while its gates fall by more
     * than {@value #FACTOR_RANGE} ({@link #factorable}), down to {@value #MIN_BLOCK}: a block longer than that
     * factors. A rule of the gates alone, so the forward and the backward cut the same blocks.
     */
    private int blockRows(float[] g, int first, int a, int len) {
        int b = Math.min(BLOCK, len - a);
        while (b > MIN_BLOCK && !factorable(g, first, a, b)) {
            b /= 2;
        }
        return b;
    }

    /**
     * Rows {@code a … a+b−1} of {@code aQK} and {@code pKK} over the columns {@code c ≤ r}: the columns before
     * {@code a} by the anchored product, the diagonal block by the same product when it is {@link #factorable},
     * else pair by pair.
     */
    private void forwardBlock(float[] q, float[] k, float[] g, int first, int a, int b, int[] rowStart, float[] aQK,
                              float[] pKK) {
        boolean factored = factors(g, first, a, b);
        int c0 = firstColumn(rowStart, a);
        anchorFactors(q, k, g, first, a, b, c0, factored);
        int cols = factored ? a + b : a;
        if (cols > c0) {
            // Whole column tiles: the columns past cols (stale rows of kCol) land at or above the diagonal, where
            // they are overwritten by a later block, zeroed at the end of the forward or never read.
            int width = ChunkMath.paddedWidth(cols - c0, SIZE - c0);
            ChunkMath.packTransposed(kd, width, kCol, c0 * kd, kd, columns);
            ChunkMath.matmul(false, b, 1f, qRow, 0, kd, columns, 0f, aQK, a * SIZE + c0, SIZE);
            ChunkMath.matmul(false, b, 1f, kRow, 0, kd, columns, 0f, pKK, a * SIZE + c0, SIZE);
        }
        for (int r = a; !factored && r < a + b; r++) {
            diagonalRowForward(q, k, g, first, a, Math.max(a, rowStart[r]), r, aQK, pKK);
        }
    }

    /**
     * Adds the gradients of q, k ({@code [L,K]}, rows of the chunk) and of the gate cumsum
     * ({@code dGamma [len,K]}) given {@code dAQK} ({@code c ≤ r}) and {@code dP} ({@code c < r}), both zero for
     * the pairs of rows of different documents ({@code c < docs.rowStart[r]}).
     */
    void backward(float[] q, float[] k, float[] g, int first, int len, KdaChunk.Documents docs, Rows rows,
                  float[] dAQK, float[] dP, float[] dq, float[] dk, float[] dGamma) {
        int[] rowStart = docs.rowStart;
        if (!inRange(rows.prefix(), len)) {
            for (int a = 0, b; a < len; a += b) {
                b = blockRows(g, first, a, len);
                backwardBlock(q, k, g, first, a, b, rowStart, dAQK, dP, dq, dk, dGamma);
            }
            return;
        }
        chunkColumns(k, g, first, len, rowStart);
        // Only the lower triangle may contribute, and only the pairs of one document: the products sum over those
        // alone, a tile of rows at a time.
        for (int r = 0; r < len; r++) {
            Arrays.fill(dAQK, r * SIZE + r + 1, r * SIZE + len, 0f);
            Arrays.fill(dP, r * SIZE + r, r * SIZE + len, 0f);
        }
        ChunkMath.matmul(docs.lower, false, len, kd, len, 1f, dAQK, 0, SIZE, kCol, 0, kd, 0f, dqRow, 0, kd);
        ChunkMath.matmul(docs.lower, false, len, kd, len, 1f, dP, 0, SIZE, kCol, 0, kd, 0f, dkRow, 0, kd);
        ChunkMath.matmul(docs.upper, true, len, kd, len, 1f, dAQK, 0, SIZE, rows.qg(), 0, kd, 0f, dkCol, 0, kd);
        ChunkMath.matmul(docs.upper, true, len, kd, len, 1f, dP, 0, SIZE, rows.kg(), 0, kd, 1f, dkCol, 0, kd);
        rowsBackward(len * kd, rows.prefix(), q, k, first * kd, dq, dk, dGamma, 0);
        columnsBackward(len * kd, k, first * kd, 0, dk, dGamma);
    }

    /**
     * The chunk's rows as {@link KdaChunk} prepares them, from row 0: {@code prefix = exp(Γ)} with Γ the gate cumsum
     * restarted at each document's first row, {@code qg = q ⊙ prefix}, {@code kg = k ⊙ prefix} ({@code [L,K]}).
     */
    record Rows(float[] prefix, float[] qg, float[] kg) {
    }

    /**
     * Whether every {@code exp(Γ)} of the chunk's {@code len} rows escaped the exponential's cut, that is
     * {@code Γ ≥ −}{@value #FACTOR_RANGE} throughout (false for NaN): then the whole chunk factors with its start as
     * the anchor. Its row factors are {@code exp(Γ_r)}, the chunk's own {@code Qg} and {@code Kg}, so only the column
     * factors {@code exp(−Γ_c) ≤ e^64} are formed, and all pairs are two products, where the blocks formed the
     * exponentials of their rows and of the columns before them over again.
     */
    private boolean inRange(float[] prefix, int len) {
        int n = len * kd;
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            if (!FloatVector.fromArray(SPECIES, prefix, i).compare(VectorOperators.GT, 0f).allTrue()) {
                return false;
            }
        }
        for (; i < n; i++) {
            if (!(prefix[i] > 0f)) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code colDecay_c = exp(−Γ_c)} and {@code kCol = k ⊙ colDecay} for every row c of the chunk, Γ the gate cumsum
     * restarted at each document's first row (summed as {@link KdaChunk} sums it, so {@code exp(Γ_r − Γ_c)} of two
     * rows of one document is {@code exp(Γ_r)·exp(−Γ_c)}).
     */
    private void chunkColumns(float[] k, float[] g, int first, int len, int[] rowStart) {
        for (int c = 0; c < len; c++) {
            if (rowStart[c] == c) {
                Arrays.fill(run, 0f);
            }
            int row = (first + c) * kd;
            int i = 0;
            for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
                FloatVector runV = FloatVector.fromArray(SPECIES, run, i)
                        .add(FloatVector.fromArray(SPECIES, g, row + i));
                runV.intoArray(run, i);
                FloatVector decay = ChunkMath.exp(runV.neg());
                decay.intoArray(colDecay, c * kd + i);
                FloatVector.fromArray(SPECIES, k, row + i).mul(decay).intoArray(kCol, c * kd + i);
            }
            for (; i < kd; i++) {
                run[i] += g[row + i];
                float decay = ChunkMath.exp(-run[i]);
                colDecay[c * kd + i] = decay;
                kCol[c * kd + i] = k[row + i] * decay;
            }
        }
    }

    /** Backward of {@link #forwardBlock}. */
    private void backwardBlock(float[] q, float[] k, float[] g, int first, int a, int b, int[] rowStart,
                               float[] dAQK, float[] dP, float[] dq, float[] dk, float[] dGamma) {
        boolean factored = factors(g, first, a, b);
        int c0 = firstColumn(rowStart, a);
        anchorFactors(q, k, g, first, a, b, c0, factored);
        if (factored) {
            // The diagonal block joins the products: only its lower triangle may contribute.
            for (int r = a; r < a + b; r++) {
                Arrays.fill(dAQK, r * SIZE + r + 1, r * SIZE + a + b, 0f);
                Arrays.fill(dP, r * SIZE + r, r * SIZE + a + b, 0f);
            }
        } else {
            for (int r = a; r < a + b; r++) {
                diagonalRowBackward(q, k, g, first, Math.max(a, rowStart[r]), r, dAQK, dP, dq, dk, dGamma);
            }
        }
        int cols = factored ? a + b : a;
        if (cols > c0) {
            // dx̃ = dM ỹ (rows of the block), dỹ = dMᵀ x̃ (the columns). Row i of the block (chunk row a + i) is zero
            // past chunk column a + i, a − c0 + i of the block's: the products skip those zeros a tile of rows at a
            // time.
            int n = cols - c0;
            int at = a * SIZE + c0;
            ChunkMath.Structure rows = ROWS[a - c0];
            ChunkMath.Structure columns = COLUMNS[a - c0];
            ChunkMath.matmul(rows, false, b, kd, n, 1f, dAQK, at, SIZE, kCol, c0 * kd, kd, 0f, dqRow, 0, kd);
            ChunkMath.matmul(rows, false, b, kd, n, 1f, dP, at, SIZE, kCol, c0 * kd, kd, 0f, dkRow, 0, kd);
            ChunkMath.matmul(columns, true, n, kd, b, 1f, dAQK, at, SIZE, qRow, 0, kd, 0f, dkCol, c0 * kd, kd);
            ChunkMath.matmul(columns, true, n, kd, b, 1f, dP, at, SIZE, kRow, 0, kd, 1f, dkCol, c0 * kd, kd);
            rowsBackward(b * kd, rowDecay, q, k, (first + a) * kd, dq, dk, dGamma, a * kd);
            columnsBackward(n * kd, k, first * kd, c0 * kd, dk, dGamma);
        }
    }

    /**
     * The rows' share, flat over their {@code n = b·K} contiguous entries: {@code dx = dx̃ ⊙ factors} (the rows'
     * decay factors) added to dq and dk, {@code dΓ += q ⊙ dx_q + k ⊙ dx_k}.
     */
    private void rowsBackward(int n, float[] factors, float[] q, float[] k, int row, float[] dq, float[] dk,
                              float[] dGamma, int gammaRow) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector decay = FloatVector.fromArray(SPECIES, factors, i);
            FloatVector dxq = FloatVector.fromArray(SPECIES, dqRow, i).mul(decay);
            FloatVector dxk = FloatVector.fromArray(SPECIES, dkRow, i).mul(decay);
            dxq.add(FloatVector.fromArray(SPECIES, dq, row + i)).intoArray(dq, row + i);
            dxk.add(FloatVector.fromArray(SPECIES, dk, row + i)).intoArray(dk, row + i);
            FloatVector.fromArray(SPECIES, q, row + i).mul(dxq)
                    .add(FloatVector.fromArray(SPECIES, k, row + i).mul(dxk))
                    .add(FloatVector.fromArray(SPECIES, dGamma, gammaRow + i))
                    .intoArray(dGamma, gammaRow + i);
        }
        for (; i < n; i++) {
            float dxq = dqRow[i] * factors[i];
            float dxk = dkRow[i] * factors[i];
            dq[row + i] += dxq;
            dk[row + i] += dxk;
            dGamma[gammaRow + i] += q[row + i] * dxq + k[row + i] * dxk;
        }
    }

    /**
     * The columns' share, flat over their {@code n = cols·K} contiguous entries from entry {@code from} of the
     * chunk's scratch (and of dΓ; entry i is entry {@code row + i} of k and dk): {@code dy = dỹ ⊙ colDecay} added to
     * dk, {@code dΓ −= k ⊙ dy}.
     */
    private void columnsBackward(int n, float[] k, int row, int from, float[] dk, float[] dGamma) {
        int end = from + n;
        int i = from;
        for (int bound = from + SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector dy = FloatVector.fromArray(SPECIES, dkCol, i).mul(FloatVector.fromArray(SPECIES, colDecay, i));
            dy.add(FloatVector.fromArray(SPECIES, dk, row + i)).intoArray(dk, row + i);
            FloatVector.fromArray(SPECIES, k, row + i).neg().fma(dy, FloatVector.fromArray(SPECIES, dGamma, i))
                    .intoArray(dGamma, i);
        }
        for (; i < end; i++) {
            float dy = dkCol[i] * colDecay[i];
            dk[row + i] += dy;
            dGamma[i] = Math.fma(-k[row + i], dy, dGamma[i]);
        }
    }

    /**
     * The first column the block at row {@code a} computes: every column before the first row of a's document is
     * masked in all of the block's rows (the documents' first rows only grow), so the column products and factors
     * start at that row, rounded down to a multiple of {@value #COLUMN_GRAIN}.
     */
    private static int firstColumn(int[] rowStart, int a) {
        return rowStart[a] / COLUMN_GRAIN * COLUMN_GRAIN;
    }

    /** Whether the block of {@link #blockRows} at {@code a} factors: any longer than {@value #MIN_BLOCK} rows does. */
    private boolean factors(float[] g, int first, int a, int b) {
        return b > MIN_BLOCK || factorable(g, first, a, b);
    }

    /**
     * Whether every {@code |Γ_r − Γ_a|} of the block of {@code b} rows at {@code a} is at most
     * {@value #FACTOR_RANGE} (false for NaN): the running sums of its gates, as {@link #rowFactors} forms them.
     */
    private boolean factorable(float[] g, int first, int a, int b) {
        Arrays.fill(run, 0f);
        boolean inRange = true;
        for (int r = 1; r < b; r++) {
            int row = (first + a + r) * kd;
            int i = 0;
            for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
                FloatVector runV = FloatVector.fromArray(SPECIES, run, i)
                        .add(FloatVector.fromArray(SPECIES, g, row + i));
                runV.intoArray(run, i);
                inRange &= runV.abs().compare(VectorOperators.LE, FACTOR_RANGE).allTrue();
            }
            for (; i < kd; i++) {
                run[i] += g[row + i];
                inRange &= Math.abs(run[i]) <= FACTOR_RANGE;
            }
        }
        return inRange;
    }

    /**
     * For the block of {@code b} rows at {@code a}: {@code rowDecay_r = exp(Γ_r − Γ_a)}, {@code qRow}, {@code kRow}
     * the rows times it; {@code colDecay_c = exp(Γ_a − Γ_c)} for {@code c0 ≤ c < a}, {@code kCol} = k times it. When
     * {@code factored} ({@link #factorable}), the columns of the block itself follow too
     * ({@code colDecay_c = exp(Γ_a − Γ_c) ≥ 1} for {@code c ≥ a}, no overflow and no underflow), so the diagonal
     * block factors like the others.
     */
    private void anchorFactors(float[] q, float[] k, float[] g, int first, int a, int b, int c0, boolean factored) {
        Arrays.fill(run, 0f);
        for (int r = 0; r < b; r++) {
            int row = (first + a + r) * kd;
            rowFactors(q, k, r > 0 ? g : null, row, r * kd);
            if (factored) {
                columnFactors(k, null, row, (a + r) * kd, true);
            }
        }
        Arrays.fill(run, 0f);
        for (int c = a - 1; c >= c0; c--) {
            columnFactors(k, g, (first + c) * kd, c * kd, false);
        }
    }

    /**
     * One row of the block in one pass: {@code run += g[gRow …]} (unless g is null), {@code rowDecay = exp(run)},
     * {@code qRow}, {@code kRow} the row times it.
     */
    private void rowFactors(float[] q, float[] k, float[] g, int row, int at) {
        int i = 0;
        for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
            FloatVector runV = FloatVector.fromArray(SPECIES, run, i);
            if (g != null) {
                runV = runV.add(FloatVector.fromArray(SPECIES, g, row + i));
                runV.intoArray(run, i);
            }
            FloatVector decay = ChunkMath.exp(runV);
            decay.intoArray(rowDecay, at + i);
            FloatVector.fromArray(SPECIES, q, row + i).mul(decay).intoArray(qRow, at + i);
            FloatVector.fromArray(SPECIES, k, row + i).mul(decay).intoArray(kRow, at + i);
        }
        for (; i < kd; i++) {
            if (g != null) {
                run[i] += g[row + i];
            }
            float decay = ChunkMath.exp(run[i]);
            rowDecay[at + i] = decay;
            qRow[at + i] = q[row + i] * decay;
            kRow[at + i] = k[row + i] * decay;
        }
    }

    /**
     * One column in one pass: {@code colDecay = exp(±run)} ({@code −run} when {@code negate}), after
     * {@code run += g[row + K …]} when g is given (the gate of the next row, walking columns backwards), and
     * {@code kCol} the column's k times it.
     */
    private void columnFactors(float[] k, float[] g, int row, int at, boolean negate) {
        int i = 0;
        for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
            FloatVector runV = FloatVector.fromArray(SPECIES, run, i);
            if (g != null) {
                runV = runV.add(FloatVector.fromArray(SPECIES, g, row + kd + i));
                runV.intoArray(run, i);
            }
            FloatVector decay = ChunkMath.exp(negate ? runV.neg() : runV);
            decay.intoArray(colDecay, at + i);
            FloatVector.fromArray(SPECIES, k, row + i).mul(decay).intoArray(kCol, at + i);
        }
        for (; i < kd; i++) {
            if (g != null) {
                run[i] += g[row + kd + i];
            }
            float decay = ChunkMath.exp(negate ? -run[i] : run[i]);
            colDecay[at + i] = decay;
            kCol[at + i] = k[row + i] * decay;
        }
    }

    /**
     * Row r of the diagonal block at a: the decay summed from r down to each column c ≥ from (the later of a and
     * the first row of r's document; the columns before it and after a are zero); the decayed column
     * {@code k_c ⊙ exp(Γ_r − Γ_c)} goes to {@code e}, and its dot products with {@code q_r} and {@code k_r} sum in
     * the width-independent order of {@link ChunkMath#dot}. Once the decay of every key element is below the
     * exponential's cut, the columns further back are 0 (gates are ≤ 0, so the sums only fall) and are not formed.
     */
    private void diagonalRowForward(float[] q, float[] k, float[] g, int first, int a, int from, int r, float[] aQK,
                                    float[] pKK) {
        int rowOff = (first + r) * kd;
        Arrays.fill(aQK, r * SIZE + a, r * SIZE + from, 0f);
        Arrays.fill(pKK, r * SIZE + a, r * SIZE + from, 0f);
        Arrays.fill(run, 0f);
        for (int c = r; c >= from; c--) {
            if (belowCut()) {
                Arrays.fill(aQK, r * SIZE + from, r * SIZE + c + 1, 0f);
                Arrays.fill(pKK, r * SIZE + from, r * SIZE + c + 1, 0f);
                break;
            }
            int colOff = (first + c) * kd;
            int i = 0;
            for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
                FloatVector runV = FloatVector.fromArray(SPECIES, run, i);
                ChunkMath.exp(runV).mul(FloatVector.fromArray(SPECIES, k, colOff + i)).intoArray(e, i);
                runV.add(FloatVector.fromArray(SPECIES, g, colOff + i)).intoArray(run, i);
            }
            for (; i < kd; i++) {
                e[i] = ChunkMath.exp(run[i]) * k[colOff + i];
                run[i] += g[colOff + i];
            }
            aQK[r * SIZE + c] = ChunkMath.dot(kd, q, rowOff, e, 0);
            pKK[r * SIZE + c] = c < r ? ChunkMath.dot(kd, k, rowOff, e, 0) : 0f;
        }
    }

    /**
     * Backward of {@link #diagonalRowForward} over the columns {@code from … r} of row r; the columns whose decays
     * are all cut (zero) add nothing and are skipped likewise.
     */
    private void diagonalRowBackward(float[] q, float[] k, float[] g, int first, int from, int r, float[] dAQK,
                                     float[] dP, float[] dq, float[] dk, float[] dGamma) {
        int rowOff = (first + r) * kd;
        Arrays.fill(run, 0f);
        Arrays.fill(dqRow, 0, kd, 0f);
        Arrays.fill(dkRow, 0, kd, 0f);
        for (int c = r; c >= from && !belowCut(); c--) {
            int colOff = (first + c) * kd;
            float gradQ = dAQK[r * SIZE + c];
            float gradK = c < r ? dP[r * SIZE + c] : 0f;
            ChunkMath.exp(kd, run, 0, e, 0);
            int i = 0;
            FloatVector gq = FloatVector.broadcast(SPECIES, gradQ);
            FloatVector gk = FloatVector.broadcast(SPECIES, gradK);
            for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
                FloatVector ev = FloatVector.fromArray(SPECIES, e, i);
                FloatVector t = ev.mul(FloatVector.fromArray(SPECIES, k, colOff + i));
                t.fma(gq, FloatVector.fromArray(SPECIES, dqRow, i)).intoArray(dqRow, i);
                t.fma(gk, FloatVector.fromArray(SPECIES, dkRow, i)).intoArray(dkRow, i);
                FloatVector dy = FloatVector.fromArray(SPECIES, q, rowOff + i).mul(gq)
                        .add(FloatVector.fromArray(SPECIES, k, rowOff + i).mul(gk)).mul(ev);
                FloatVector.fromArray(SPECIES, dk, colOff + i).add(dy).intoArray(dk, colOff + i);
                FloatVector.fromArray(SPECIES, k, colOff + i).neg()
                        .fma(dy, FloatVector.fromArray(SPECIES, dGamma, c * kd + i)).intoArray(dGamma, c * kd + i);
            }
            for (; i < kd; i++) {
                float t = e[i] * k[colOff + i];
                dqRow[i] = Math.fma(t, gradQ, dqRow[i]);
                dkRow[i] = Math.fma(t, gradK, dkRow[i]);
                float dy = (q[rowOff + i] * gradQ + k[rowOff + i] * gradK) * e[i];
                dk[colOff + i] += dy;
                dGamma[c * kd + i] = Math.fma(-k[colOff + i], dy, dGamma[c * kd + i]);
            }
            ChunkMath.axpy(kd, 1f, g, colOff, run, 0);
        }
        for (int i = 0; i < kd; i++) {
            dq[rowOff + i] += dqRow[i];
            dk[rowOff + i] += dkRow[i];
            dGamma[r * kd + i] += q[rowOff + i] * dqRow[i] + k[rowOff + i] * dkRow[i];
        }
    }

    /** Whether every key element's running decay sum {@link #run} is below the exponential's cut (all decays 0). */
    private boolean belowCut() {
        int i = 0;
        for (int bound = SPECIES.loopBound(kd); i < bound; i += LANES) {
            if (!FloatVector.fromArray(SPECIES, run, i).compare(VectorOperators.LT, ChunkMath.EXP_CUTOFF).allTrue()) {
                return false;
            }
        }
        for (; i < kd; i++) {
            if (!(run[i] < ChunkMath.EXP_CUTOFF)) {
                return false;
            }
        }
        return true;
    }
}
