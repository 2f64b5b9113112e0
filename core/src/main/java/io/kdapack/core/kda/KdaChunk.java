package io.kdapack.core.kda;

import static io.kdapack.core.kda.ChunkMath.Structure.LOWER_A;
import static io.kdapack.core.kda.ChunkMath.Structure.LOWER_C;
import static io.kdapack.core.kda.ChunkMath.axpy;
import static io.kdapack.core.kda.ChunkMath.dot;
import static io.kdapack.core.kda.ChunkMath.multiply;
import static io.kdapack.core.kda.ChunkMath.multiplyAdd;
import static io.kdapack.core.kda.ChunkMath.scale;

import io.kdapack.core.linalg.VectorWidth;
import java.util.Arrays;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * One chunk of at most {@value #SIZE} consecutive tokens of one value head, forward and backward, in the WY/UT
 * form of architecture §2; the scratch buffers of one task, reused chunk after chunk (not thread-safe). The chunk
 * lies over a run of documents wherever they start and end ({@link Documents}); a document boundary inside it is
 * handled by masks.
 *
 * <p>With {@code Γ} the gate cumsum restarted at each document's first row in the chunk (and at the chunk start),
 * {@code Λ_r} the sum of the gates after row r to its document's last row in the chunk ({@code [L,K]}),
 * {@code L ≤ 64}, and {@code D(r)} the document of row r:
 * <pre>
 *   Qg = Q ⊙ exp(Γ)   Kg = K ⊙ exp(Γ)   Kd = K ⊙ exp(Λ)   e_D = exp(Γ at D's last row)
 *   P[r,c]   = Σ_d k_r k_c exp(Γ_r − Γ_c)   (c &lt; r, D(c) = D(r))      A = diag(β) P
 *   Aqk[r,c] = Σ_d q_r k_c exp(Γ_r − Γ_c)   (c ≤ r, D(c) = D(r))
 *   W = (I + A)⁻¹ diag(β) Kg,  U = (I + A)⁻¹ diag(β) V   (block diagonal by document)
 *   V'_D = U_D − W_D S_D     O_D = Qg_D S_D + (Aqk V')_D     S'_D = diag(e_D) S_D + Kd_Dᵀ V'_D
 * </pre>
 * where {@code S_D} is the state document D enters the chunk with: the state carried from the previous chunk for
 * the document that continues from it, the document's initial state (or zero, and then its products are skipped)
 * for one that starts inside. {@code S'} of the chunk's last document is carried on when it continues into the
 * next chunk; the others' are their final states, computed only when asked for. Pairs of rows of different
 * documents are masked out of {@code P} and {@code Aqk} (and their gradients): no exponential is ever formed across
 * a boundary. Every exponent is a sum of gates formed before {@code exp}: prefix sums for {@code exp(Γ)}, suffix
 * sums for {@code exp(Λ)} (both {@code ≤ 0}), and for the pairwise factors ({@link PairwiseDecay}) either
 * {@code −Γ} (at most 64, where Γ stays that close to 0 over the chunk) or sums between rows, so gates of −1000 give
 * exact zeros rather than overflow. The products are register-tiled Vector API kernels ({@link ChunkMath#matmul})
 * on the chunk's small, cache-resident blocks, where packing for a general GEMM would cost as much as the product.
 */
public final class KdaChunk {

    public static final int SIZE = 64;
    private static final VectorSpecies<Double> DOUBLES = VectorWidth.DOUBLES;
    private static final int DOUBLE_LANES = DOUBLES.length();
    private static final VectorSpecies<Float> HALF_FLOATS = VectorWidth.HALF_FLOATS;
    /** Rows per block of the triangular inverse. */
    private static final int INVERSE_BLOCK = 16;

    private final int kd;
    private final int vd;
    /** The forward intermediates in use: {@link #own}, or one kept by the caller. */
    private Intermediates p;
    private final Intermediates own;
    /**
     * {@code exp(Γ)}, {@code exp(Λ)} ({@code [L,K]}, {@link #decays}): formed again by the backward from the gates
     * rather than kept, which was slower (their 32 KiB of tape a chunk, written and read back, cost more than the
     * exponentials).
     */
    private final float[] expPrefix;
    private final float[] expSuffix;
    /**
     * {@code Qg}, {@code Kg}, {@code Kd} ({@code [L,K]}): elementwise products of q and k with the exponentials, so
     * they are not kept but formed again by the backward ({@link #decays}) from rows it reads anyway.
     */
    private final float[] qg;
    private final float[] kg;
    private final float[] kDecayed;
    private final float[] a;
    /** The chunk's rows of the values, {@code [L,V]} ({@link #gatherRows}). */
    private final float[] vChunk;
    /** The chunk's rows of the outputs, {@code [L,V]}, before they are written to the token-major tensor. */
    private final float[] oChunk;
    /** The chunk's rows of the upstream gradient {@code dO}, {@code [L,V]} ({@link #gatherRows}). */
    private final float[] dOChunk;
    // Backward scratch.
    private final float[] dVNew;
    private final float[] dKDecayed;
    private final float[] dQg;
    private final float[] dW;
    private final float[] dVb;
    private final float[] dKb;
    private final float[] dA;
    private final float[] dAQK;
    private final float[] dGamma;
    private final PairwiseDecay pairs;
    /** {@link #expPrefix}, {@link #qg} and {@link #kg}, which the pair products factor by where they can. */
    private final PairwiseDecay.Rows decayedRows;
    private final float[] run;
    private final float[] kb;
    private final float[] vb;
    /** The right operand of the {@code A·Bᵀ} products, packed transposed ({@code [K or V, ≤ 64]}). */
    private final ChunkMath.Packed transposed;
    /**
     * The entry state of each document of the chunk with one ({@code [K,V]}, index j of {@link Documents}), packed
     * once for the products that share it: as B in the forward ({@code W S}, {@code Qg S}), as Bᵀ in the backward
     * ({@code dO Sᵀ}, {@code dV' Sᵀ}). As B it may refer to the state itself ({@link ChunkMath#pack}), which the
     * forward therefore overwrites (the carried state) only after its last product. Grown to the most documents a
     * chunk has had, at most {@value #SIZE}.
     */
    private ChunkMath.Packed[] entries = new ChunkMath.Packed[0];
    /** The gradient of the end state being handled, packed as B and as Bᵀ. */
    private final ChunkMath.Packed endGradient;
    private final ChunkMath.Packed endGradientTransposed;
    private final float[] blockRows;
    /**
     * The chunk's rows when it prepares them itself ({@link #loadRows}), in the forward and again in the backward:
     * kept instead, their 49 KiB of tape a chunk-head (K = 64), written and read back, cost more than preparing them
     * again from the raw inputs (1–2 % of the training call, gate included; measured in turns in one JVM).
     */
    private final KdaPreprocess.PreparedRows rows;
    /** The gradients of {@link #rows}. */
    private final KdaPreprocess.RowGradients rowGradients;
    /**
     * Where the chunk reads its prepared q, k ({@code [L,K]} from row {@link #row0}), decay and beta, and writes
     * their gradients: the call's head-major tensors from the chunk's first row, or, from row 0, {@link #rows} and
     * {@link #rowGradients}.
     */
    private float[] qIn;
    private float[] kIn;
    private float[] gIn;
    private float[] betaIn;
    private float[] dqOut;
    private float[] dkOut;
    private float[] dgOut;
    private float[] dBetaOut;
    private int row0;
    /** Where in its array the carried state the chunk enters with starts ({@link #forward}, {@link #backward}). */
    private int carriedAt;

    KdaChunk(int keyDim, int valueDim) {
        kd = keyDim;
        vd = valueDim;
        own = new Intermediates(keyDim, valueDim);
        p = own;
        expPrefix = new float[SIZE * kd];
        expSuffix = new float[SIZE * kd];
        qg = new float[SIZE * kd];
        kg = new float[SIZE * kd];
        kDecayed = new float[SIZE * kd];
        a = new float[SIZE * SIZE];
        vChunk = new float[SIZE * vd];
        oChunk = new float[SIZE * vd];
        dOChunk = new float[SIZE * vd];
        dVNew = new float[SIZE * vd];
        dKDecayed = new float[SIZE * kd];
        dQg = new float[SIZE * kd];
        dW = new float[SIZE * kd];
        dVb = new float[SIZE * vd];
        dKb = new float[SIZE * kd];
        dA = new float[SIZE * SIZE];
        dAQK = new float[SIZE * SIZE];
        dGamma = new float[SIZE * kd];
        pairs = new PairwiseDecay(kd);
        decayedRows = new PairwiseDecay.Rows(expPrefix, qg, kg);
        run = new float[kd];
        kb = new float[SIZE * kd];
        vb = new float[SIZE * vd];
        transposed = new ChunkMath.Packed(Math.max(kd, vd), SIZE);
        endGradient = packedState();
        endGradientTransposed = packedState();
        blockRows = new float[INVERSE_BLOCK * SIZE];
        rows = new KdaPreprocess.PreparedRows(SIZE, kd);
        rowGradients = new KdaPreprocess.RowGradients(SIZE, kd);
    }

    /**
     * Points the chunk at its prepared rows: in the call's head-major tensors, or, where {@code s} prepares them per
     * chunk ({@link HeadParallelBackend.HeadSequence#rows}), {@link #rows}, prepared here from the raw inputs.
     */
    private void loadRows(HeadParallelBackend.HeadSequence s, int first, int len,
                          HeadParallelBackend.HeadGradients grads) {
        if (s.rows() == null) {
            qIn = s.q();
            kIn = s.k();
            gIn = s.g();
            betaIn = s.beta();
            if (grads != null) {
                dqOut = grads.dq();
                dkOut = grads.dk();
                dgOut = grads.dg();
                dBetaOut = grads.dBeta();
            }
            row0 = first;
            return;
        }
        s.rows().forward(s.head(), s.token(first), len, rows);
        qIn = rows.q;
        kIn = rows.k;
        gIn = rows.decay;
        betaIn = rows.beta;
        dqOut = rowGradients.dq;
        dkOut = rowGradients.dk;
        dgOut = rowGradients.dDecay;
        dBetaOut = rowGradients.dBeta;
        row0 = 0;
    }

    /** Fresh storage for one chunk's forward intermediates (about {@link Intermediates#floats} floats). */
    Intermediates newIntermediates() {
        return new Intermediates(kd, vd);
    }

    /** Whether this scratch serves heads of key dim {@code keyDim} and value dim {@code valueDim}. */
    boolean fits(int keyDim, int valueDim) {
        return kd == keyDim && vd == valueDim;
    }

    /** Whether {@code intermediates} were made for this chunk's dimensions. */
    boolean fits(Intermediates intermediates) {
        return intermediates.kd == kd && intermediates.vd == vd;
    }

    /**
     * Forward of the chunk of {@code len} tokens starting at head-major row {@code first} of {@code s}'s tensors,
     * over the documents {@code docs}: writes the outputs to the same tokens' rows of {@code o [T,HV,V]} (unless
     * null), writes the state of the last document to {@code next [K,V]} from {@code nextAt} when it continues into
     * the next chunk ({@code docs.carries}), and the final states of the documents ending here to {@code ht} when it
     * is not null. The carried state it enters with ({@code [K,V]} from {@code state[stateAt]}, that of the document
     * continuing from the previous chunk) is read only when {@code docs.continues}; {@code next} may be that same
     * state. The forward intermediates go to {@code keep} when given, for a later {@link #backward} of the same
     * chunk.
     *
     * @param h0 {@code [N,HV,K,V]} initial states or null
     * @param ht {@code [N,HV,K,V]} final states to write, or null
     */
    void forward(HeadParallelBackend.HeadSequence s, int first, int len, Documents docs, float[] state, int stateAt,
                 float[] next, int nextAt, float[] h0, float[] ht, float[] o, Intermediates keep) {
        p = keep != null ? keep : own;
        carriedAt = stateAt;
        loadRows(s, first, len, null);
        prepare(s, first, len, docs, state, h0);
        if (o != null) {
            // O = Aqk V' + Qg S_D per document with a state (Aqk is zero above the diagonal and across documents),
            // in contiguous scratch, then copied to the token-major rows: rows HV·V floats apart (1 KiB at HV·V = 256)
            // fall into a quarter of the L1 sets, and the second product reads back what the first wrote.
            ChunkMath.matmul(docs.lower, false, len, vd, len, 1f, p.aQK, 0, SIZE, p.vNew, 0, vd, 0f, oChunk, 0, vd);
            for (int j = 0; j < docs.count; j++) {
                if (entryState(docs, j, state, h0) != null) {
                    int r0 = docs.start[j];
                    ChunkMath.matmul(false, docs.end[j] - r0, 1f, qg, r0 * kd, kd, entries[j], 1f, oChunk, r0 * vd,
                            vd);
                }
            }
            int oOff = s.valueOffset(first);
            int ld = s.valueStride();
            for (int r = 0; r < len; r++) {
                System.arraycopy(oChunk, r * vd, o, oOff + r * ld, vd);
            }
        }
        // S'_D = diag(e_D) S_D + Kd_Dᵀ V'_D: the final states asked for and the carried state, written (maybe over the
        // state it continues: elementwise, then added to) after every other document read the state entered with.
        for (int j = 0; j < docs.count; j++) {
            boolean carried = j == docs.count - 1 && docs.carries;
            if (carried) {
                endState(s, docs, j, state, h0, next, nextAt);
            } else if (ht != null) {
                endState(s, docs, j, state, h0, ht, s.stateOffset(docs.doc[j]));
            }
        }
    }

    /**
     * {@code dest[destOff …] = diag(e_D) S_D + Kd_Dᵀ V'_D} for document j of the chunk; dest may be S_D itself (the
     * carried state).
     */
    private void endState(HeadParallelBackend.HeadSequence s, Documents docs, int j, float[] state, float[] h0,
                          float[] dest, int destOff) {
        int r0 = docs.start[j];
        int rows = docs.end[j] - r0;
        float[] entry = entryState(docs, j, state, h0);
        float beta = 0f;
        if (entry != null) {
            int entryOff = entryOffset(s, docs, j);
            int last = (docs.end[j] - 1) * kd;
            for (int i = 0; i < kd; i++) {
                scale(vd, expPrefix[last + i], entry, entryOff + i * vd, dest, destOff + i * vd);
            }
            beta = 1f;
        }
        ChunkMath.matmul(true, kd, vd, rows, 1f, kDecayed, r0 * kd, kd, p.vNew, r0 * vd, vd, beta, dest, destOff,
                vd);
    }

    /** The state document j enters the chunk with: the carried state, its initial state, or null for zero. */
    private static float[] entryState(Documents docs, int j, float[] state, float[] h0) {
        return j == 0 && docs.continues ? state : h0;
    }

    private int entryOffset(HeadParallelBackend.HeadSequence s, Documents docs, int j) {
        return j == 0 && docs.continues ? carriedAt : s.stateOffset(docs.doc[j]);
    }

    /**
     * Backward of the chunk given the carried state it started from ({@code [K,V]} from {@code s0[s0At]}, read when
     * {@code docs.continues}). {@code dState [K,V]} holds the gradient of the state carried on (when
     * {@code docs.carries}) on entry and of {@code s0} on return (when {@code docs.continues}); the gradients of the
     * final states of the documents ending here come from {@code dHt} (null for zero), those of the initial states of
     * the documents starting here go to {@code dH0} (null when there are no initial states); gradients of the
     * chunk's rows are written into {@code grads}; {@code dO [T,HV,V]} is token-major. {@code kept} holds the chunk's
     * forward intermediates from {@link #forward}, or is null to recompute them.
     */
    void backward(HeadParallelBackend.HeadSequence s, int first, int len, Documents docs, float[] s0, int s0At,
                  float[] h0, float[] dO, float[] dState, float[] dHt, float[] dH0,
                  HeadParallelBackend.HeadGradients grads, Intermediates kept) {
        p = kept != null ? kept : own;
        carriedAt = s0At;
        loadRows(s, first, len, grads);
        if (kept != null) {
            gatherRows(s, first, len, s.v(), vChunk);
            decays(len, docs);
        } else {
            prepare(s, first, len, docs, s0, h0);
        }
        gatherRows(s, first, len, dO, dOChunk);
        // dq and dk collect several terms below; dv, dβ and dg are written once.
        Arrays.fill(dqOut, row0 * kd, (row0 + len) * kd, 0f);
        Arrays.fill(dkOut, row0 * kd, (row0 + len) * kd, 0f);
        Arrays.fill(dGamma, 0, len * kd, 0f);
        // Through S'_D = diag(e_D) S_D + Kd_Dᵀ V'_D, for the documents whose end state has a gradient; each entry
        // state is packed transposed here once, for this loop and the one after dV'.
        for (int j = 0; j < docs.count; j++) {
            int r0 = docs.start[j];
            int rows = docs.end[j] - r0;
            float[] entry = entryState(docs, j, s0, h0);
            if (entry != null) {
                ChunkMath.packTransposed(vd, kd, entry, entryOffset(s, docs, j), vd, entry(j));
            }
            float[] dOut = endStateGradient(docs, j, dState, dHt);
            if (dOut == null) {
                Arrays.fill(dVNew, r0 * vd, (r0 + rows) * vd, 0f);
                Arrays.fill(dKDecayed, r0 * kd, (r0 + rows) * kd, 0f);
                continue;
            }
            int dOutOff = endStateGradientOffset(s, docs, j);
            ChunkMath.pack(kd, vd, dOut, dOutOff, vd, endGradient);
            ChunkMath.matmul(false, rows, 1f, kDecayed, r0 * kd, kd, endGradient, 0f, dVNew, r0 * vd, vd);
            ChunkMath.packTransposed(vd, kd, dOut, dOutOff, vd, endGradientTransposed);
            ChunkMath.matmul(false, rows, 1f, p.vNew, r0 * vd, vd, endGradientTransposed, 0f, dKDecayed, r0 * kd, kd);
            if (entry != null) {
                // dΓ at the document's last row += e_D ⊙ Σ_j S_D[:,j] ⊙ dS'_D[:,j] (over the transposed states).
                Arrays.fill(run, 0f);
                entries[j].columnDotsInto(endGradientTransposed, run);
                multiply(kd, expPrefix, (docs.end[j] - 1) * kd, run, 0, dGamma, (docs.end[j] - 1) * kd);
            }
        }
        // dAqk = dO V'ᵀ (only c ≤ r of the same document is read), dV' += Aqkᵀ dO.
        // The lower-triangular results are computed over whole column tiles (`width`): their columns past len
        // come from the stale rows past len of V', U, W and are never read.
        int width = ChunkMath.paddedWidth(len, SIZE);
        ChunkMath.matmulTransB(LOWER_C, len, width, vd, 1f, dOChunk, 0, vd, p.vNew, 0, vd, 0f, dAQK, 0, SIZE,
                transposed);
        maskAcrossDocuments(docs, len, dAQK);
        ChunkMath.matmul(docs.upper, true, len, vd, len, 1f, p.aQK, 0, SIZE, dOChunk, 0, vd, 1f, dVNew, 0, vd);
        // Through O_D = Qg_D S_D + … and V'_D = U_D − W_D S_D, for the documents entering with a state; the
        // others' dQg and dW are zero. Last document first: it may read dState, which the first one writes.
        for (int j = docs.count - 1; j >= 0; j--) {
            int r0 = docs.start[j];
            int rows = docs.end[j] - r0;
            if (entryState(docs, j, s0, h0) == null) {
                Arrays.fill(dQg, r0 * kd, (r0 + rows) * kd, 0f);
                Arrays.fill(dW, r0 * kd, (r0 + rows) * kd, 0f);
                continue;
            }
            ChunkMath.matmul(false, rows, 1f, dOChunk, r0 * vd, vd, entries[j], 0f, dQg, r0 * kd, kd);
            ChunkMath.matmul(false, rows, -1f, dVNew, r0 * vd, vd, entries[j], 0f, dW, r0 * kd, kd);
            // dS_D = diag(e_D) dS'_D + Qg_Dᵀ dO_D − W_Dᵀ dV'_D, written to the carried gradient or to dH0 (over dS'_D
            // itself when both are the carried one: elementwise, then added to).
            boolean carried = j == 0 && docs.continues;
            float[] dest = carried ? dState : dH0;
            int destOff = carried ? 0 : s.stateOffset(docs.doc[j]);
            float[] dOut = endStateGradient(docs, j, dState, dHt);
            float beta = 0f;
            if (dOut != null) {
                int dOutOff = endStateGradientOffset(s, docs, j);
                int last = (docs.end[j] - 1) * kd;
                for (int i = 0; i < kd; i++) {
                    scale(vd, expPrefix[last + i], dOut, dOutOff + i * vd, dest, destOff + i * vd);
                }
                beta = 1f;
            }
            ChunkMath.matmul(true, kd, vd, rows, 1f, qg, r0 * kd, kd, dOChunk, r0 * vd, vd, beta, dest, destOff, vd);
            ChunkMath.matmul(true, kd, vd, rows, -1f, p.w, r0 * kd, kd, dVNew, r0 * vd, vd, 1f, dest, destOff, vd);
        }
        // Through U = (I + A)⁻¹ diag(β) V and W likewise: dVb = (I + A)⁻ᵀ dU, dA = −(dVb Uᵀ + dKb Wᵀ).
        ChunkMath.matmul(docs.upper, true, len, vd, len, 1f, p.inverse, 0, SIZE, dVNew, 0, vd, 0f, dVb, 0, vd);
        ChunkMath.matmul(docs.upper, true, len, kd, len, 1f, p.inverse, 0, SIZE, dW, 0, kd, 0f, dKb, 0, kd);
        // dA (only c < r of the same document is read).
        ChunkMath.matmulTransB(LOWER_C, len, width, vd, -1f, dVb, 0, vd, p.u, 0, vd, 0f, dA, 0, SIZE, transposed);
        ChunkMath.matmulTransB(LOWER_C, len, width, kd, -1f, dKb, 0, kd, p.w, 0, kd, 1f, dA, 0, SIZE, transposed);
        maskAcrossDocuments(docs, len, dA);
        int dvOff = s.valueOffset(first);
        int ld = s.valueStride();
        for (int r = 0; r < len; r++) {
            float beta = betaIn[row0 + r];
            dBetaOut[row0 + r] = dot(vd, vChunk, r * vd, dVb, r * vd)
                    + dot(kd, kg, r * kd, dKb, r * kd) + dot(r, dA, r * SIZE, p.pairKK, r * SIZE);
            scale(r, beta, dA, r * SIZE, dA, r * SIZE); // now the gradient of P
            scale(vd, beta, dVb, r * vd, grads.dv(), dvOff + r * ld);
            scale(kd, beta, dKb, r * kd, dKb, r * kd); // now the gradient of Kg
        }
        pairs.backward(qIn, kIn, gIn, row0, len, docs, decayedRows, dAQK, dA, dqOut, dkOut, dGamma);
        elementwiseBackward(len, docs);
        gateGradients(docs);
        if (s.rows() != null) {
            s.rows().backward(s.head(), s.token(first), len, rows, rowGradients, grads.dq(), grads.dk(), grads.dg(),
                    grads.dBeta(), grads.aLogRows());
        }
    }

    /**
     * {@code dg_t = Σ dΓ_r} over the rows {@code r ≥ t} of t's document in the chunk, summed in double (the terms
     * cancel heavily), into the chunk's rows of {@code dg}. Two vectors of doubles walk a document's rows upwards,
     * so each column's running sum stays in a register (three times faster than the element loop, which loaded and
     * stored every sum). Each column sums in row order whatever the width: the same bits at any width.
     */
    private void gateGradients(Documents docs) {
        for (int j = 0; j < docs.count; j++) {
            int i = 0;
            for (; i + 2 * DOUBLE_LANES <= kd; i += 2 * DOUBLE_LANES) {
                DoubleVector sum0 = DoubleVector.zero(DOUBLES);
                DoubleVector sum1 = DoubleVector.zero(DOUBLES);
                for (int r = docs.end[j] - 1; r >= docs.start[j]; r--) {
                    int at = r * kd + i;
                    int out = (row0 + r) * kd + i;
                    sum0 = sum0.add(VectorWidth.toDoubles(dGamma, at));
                    sum1 = sum1.add(VectorWidth.toDoubles(dGamma, at + DOUBLE_LANES));
                    ((FloatVector) sum0.convertShape(VectorOperators.D2F, HALF_FLOATS, 0)).intoArray(dgOut, out);
                    ((FloatVector) sum1.convertShape(VectorOperators.D2F, HALF_FLOATS, 0))
                            .intoArray(dgOut, out + DOUBLE_LANES);
                }
            }
            for (; i < kd; i++) {
                double sum = 0;
                for (int r = docs.end[j] - 1; r >= docs.start[j]; r--) {
                    sum += dGamma[r * kd + i];
                    dgOut[(row0 + r) * kd + i] = (float) sum;
                }
            }
        }
    }

    /** The gradient of document j's end state: the carried one, its final state's (from dHt), or null for zero. */
    private static float[] endStateGradient(Documents docs, int j, float[] dState, float[] dHt) {
        return j == docs.count - 1 && docs.carries ? dState : dHt;
    }

    private static int endStateGradientOffset(HeadParallelBackend.HeadSequence s, Documents docs, int j) {
        return j == docs.count - 1 && docs.carries ? 0 : s.stateOffset(docs.doc[j]);
    }

    /** Zeroes {@code m[r·64 + c]} for every pair of rows of different documents ({@code c < r}). */
    private static void maskAcrossDocuments(Documents docs, int len, float[] m) {
        if (docs.count == 1) {
            return;
        }
        for (int r = 0; r < len; r++) {
            Arrays.fill(m, r * SIZE, r * SIZE + docs.rowStart[r], 0f);
        }
    }

    /** Computes every forward intermediate up to V' for the chunk entered with the carried {@code state}. */
    private void prepare(HeadParallelBackend.HeadSequence s, int first, int len, Documents docs, float[] state,
                         float[] h0) {
        gatherRows(s, first, len, s.v(), vChunk);
        decays(len, docs);
        pairs.forward(qIn, kIn, gIn, row0, len, docs, decayedRows, p.aQK, p.pairKK);
        for (int r = 0; r < len; r++) {
            float beta = betaIn[row0 + r];
            scale(r, beta, p.pairKK, r * SIZE, a, r * SIZE);
            // The right-hand sides of W = (I + A)⁻¹ diag(β) Kg and U = (I + A)⁻¹ diag(β) V.
            scale(kd, beta, kg, r * kd, kb, r * kd);
            scale(vd, beta, vChunk, r * vd, vb, r * vd);
        }
        invertUnitLower(len);
        ChunkMath.matmul(docs.lower, false, len, kd, len, 1f, p.inverse, 0, SIZE, kb, 0, kd, 0f, p.w, 0, kd);
        ChunkMath.matmul(docs.lower, false, len, vd, len, 1f, p.inverse, 0, SIZE, vb, 0, vd, 0f, p.u, 0, vd);
        System.arraycopy(p.u, 0, p.vNew, 0, len * vd);
        for (int j = 0; j < docs.count; j++) {
            float[] entry = entryState(docs, j, state, h0);
            if (entry != null) {
                int r0 = docs.start[j];
                ChunkMath.pack(kd, vd, entry, entryOffset(s, docs, j), vd, entry(j));
                ChunkMath.matmul(false, docs.end[j] - r0, -1f, p.w, r0 * kd, kd, entries[j], 1f, p.vNew, r0 * vd, vd);
            }
        }
    }

    /**
     * {@code expPrefix = exp(Γ)} and {@code expSuffix = exp(Λ)} (prefix sums of the gates restarted at each
     * document's first row, suffix sums at each one's last row), then {@code Qg = Q ⊙ exp(Γ)}, {@code Kg = K ⊙ exp(Γ)}
     * and {@code Kd = K ⊙ exp(Λ)}.
     */
    private void decays(int len, Documents docs) {
        for (int r = 0; r < len; r++) {
            if (docs.rowStart[r] == r) {
                Arrays.fill(run, 0f);
            }
            axpy(kd, 1f, gIn, (row0 + r) * kd, run, 0);
            ChunkMath.exp(kd, run, 0, expPrefix, r * kd);
        }
        for (int r = len - 1; r >= 0; r--) {
            if (docs.rowEnd[r] == r + 1) {
                Arrays.fill(run, 0f);
            }
            ChunkMath.exp(kd, run, 0, expSuffix, r * kd);
            axpy(kd, 1f, gIn, (row0 + r) * kd, run, 0);
        }
        multiply(len * kd, qIn, row0 * kd, expPrefix, 0, qg, 0);
        multiply(len * kd, kIn, row0 * kd, expPrefix, 0, kg, 0);
        multiply(len * kd, kIn, row0 * kd, expSuffix, 0, kDecayed, 0);
    }

    /**
     * Copies the chunk's rows of a token-major {@code x [T,HV,V]} to {@code out [L,V]}, in one tight loop: the rows
     * are {@code HV·V} floats apart, and read one by one amid the chunk's arithmetic they stall on memory far longer
     * than this copy (the forward was 10–12 % slower so, at T = 4096, HV·V = 256).
     */
    private void gatherRows(HeadParallelBackend.HeadSequence s, int first, int len, float[] x, float[] out) {
        int off = s.valueOffset(first);
        int ld = s.valueStride();
        for (int r = 0; r < len; r++) {
            System.arraycopy(x, off + r * ld, out, r * vd, vd);
        }
    }

    /** The packed entry state of document j of the chunk, allocated on first use. */
    private ChunkMath.Packed entry(int j) {
        if (j >= entries.length) {
            int old = entries.length;
            entries = Arrays.copyOf(entries, j + 1);
            for (int i = old; i <= j; i++) {
                entries[i] = packedState();
            }
        }
        return entries[j];
    }

    /** Room for a {@code [K,V]} state packed as B or as Bᵀ. */
    private ChunkMath.Packed packedState() {
        int d = Math.max(kd, vd);
        return new ChunkMath.Packed(d, d);
    }

    /**
     * Backward of {@code Qg = Q ⊙ exp(Γ)}, {@code Kg = K ⊙ exp(Γ)}, {@code Kd = K ⊙ exp(Λ)} (Λ_r = Γ at the last row
     * of r's document − Γ_r).
     */
    private void elementwiseBackward(int len, Documents docs) {
        int rows = row0 * kd;
        multiplyAdd(len * kd, dQg, 0, expPrefix, 0, dqOut, rows);
        multiplyAdd(len * kd, dKb, 0, expPrefix, 0, dkOut, rows);
        multiplyAdd(len * kd, dKDecayed, 0, expSuffix, 0, dkOut, rows);
        // dΓ_r += Qg⊙dQg + Kg⊙dKg − Kd⊙dKd per row; Γ at each document's last row also collects Σ_r Kd⊙dKd (in run).
        for (int j = 0; j < docs.count; j++) {
            Arrays.fill(run, 0f);
            for (int r = docs.start[j]; r < docs.end[j]; r++) {
                int off = r * kd;
                int i = 0;
                for (int bound = ChunkMath.SPECIES.loopBound(kd); i < bound; i += ChunkMath.SPECIES.length()) {
                    FloatVector fromKd = FloatVector.fromArray(ChunkMath.SPECIES, kDecayed, off + i)
                            .mul(FloatVector.fromArray(ChunkMath.SPECIES, dKDecayed, off + i));
                    FloatVector.fromArray(ChunkMath.SPECIES, qg, off + i)
                            .fma(FloatVector.fromArray(ChunkMath.SPECIES, dQg, off + i),
                                    FloatVector.fromArray(ChunkMath.SPECIES, dGamma, off + i))
                            .add(FloatVector.fromArray(ChunkMath.SPECIES, kg, off + i)
                                    .mul(FloatVector.fromArray(ChunkMath.SPECIES, dKb, off + i)))
                            .sub(fromKd)
                            .intoArray(dGamma, off + i);
                    fromKd.add(FloatVector.fromArray(ChunkMath.SPECIES, run, i)).intoArray(run, i);
                }
                for (; i < kd; i++) {
                    float fromKd = kDecayed[off + i] * dKDecayed[off + i];
                    dGamma[off + i] = Math.fma(qg[off + i], dQg[off + i], dGamma[off + i])
                            + kg[off + i] * dKb[off + i] - fromKd;
                    run[i] += fromKd;
                }
            }
            ChunkMath.axpy(kd, 1f, run, 0, dGamma, (docs.end[j] - 1) * kd);
        }
    }

    /**
     * {@code inverse = (I + A)⁻¹}, unit lower triangular (zero above the diagonal up to column len), by blocks
     * of {@value #INVERSE_BLOCK} rows: the diagonal block {@code T_ii} by forward substitution over its rows
     * ({@code T_r = e_r − Σ_{c<r} A[r,c] T_c}), then the block's left part from the rows above,
     * {@code T_i,<i = −T_ii · (A_i,<i · T_<i,<i)}, as two products.
     */
    private void invertUnitLower(int len) {
        float[] t = p.inverse;
        for (int r0 = 0; r0 < len; r0 += INVERSE_BLOCK) {
            int rows = Math.min(INVERSE_BLOCK, len - r0);
            int vectorEnd = ChunkMath.SPECIES.loopBound(rows);
            for (int r = r0; r < r0 + rows; r++) {
                int row = r * SIZE;
                Arrays.fill(t, row, row + len, 0f);
                t[row + r] = 1f;
                // Over the block's whole width: row c is zero past column c, and y + (−a·0) is y, so the extra
                // columns keep their bits while the update runs on whole vectors rather than on scalar tails (the
                // inverse at L = 64 in 5.3 µs instead of 8.3). Each vector of the row stays in a register over c:
                // the fused multiply-adds of an axpy per c, in the same order, without its loads and stores.
                for (int i = 0; i < vectorEnd; i += ChunkMath.SPECIES.length()) {
                    FloatVector acc = FloatVector.fromArray(ChunkMath.SPECIES, t, row + r0 + i);
                    for (int c = r0; c < r; c++) {
                        float arc = a[row + c];
                        if (arc != 0f) {
                            acc = FloatVector.fromArray(ChunkMath.SPECIES, t, c * SIZE + r0 + i)
                                    .fma(FloatVector.broadcast(ChunkMath.SPECIES, -arc), acc);
                        }
                    }
                    acc.intoArray(t, row + r0 + i);
                }
                for (int i = vectorEnd; i < rows; i++) {
                    float acc = t[row + r0 + i];
                    for (int c = r0; c < r; c++) {
                        float arc = a[row + c];
                        if (arc != 0f) {
                            acc = Math.fma(t[c * SIZE + r0 + i], -arc, acc);
                        }
                    }
                    t[row + r0 + i] = acc;
                }
            }
            if (r0 > 0) {
                ChunkMath.matmul(false, rows, r0, r0, 1f, a, r0 * SIZE, SIZE, t, 0, SIZE, 0f,
                        blockRows, 0, SIZE);
                ChunkMath.matmul(LOWER_A, false, rows, r0, rows, -1f, t, r0 * SIZE + r0, SIZE, blockRows, 0,
                        SIZE, 0f, t, r0 * SIZE, SIZE);
            }
        }
    }

    /**
     * The documents of one chunk of {@code len} rows: document {@code doc[j]} covers local rows
     * {@code start[j] … end[j]−1}, {@code j < count}, in order and covering every row (zero-length documents own
     * none and are not listed). {@code continues}: the first one started before the chunk (and enters it with the
     * carried state); {@code carries}: the last one goes on past the chunk (and its state is carried on).
     * {@code rowStart[r]}, {@code rowEnd[r]}: the local rows of r's document. Mutable, reused chunk after chunk.
     */
    static final class Documents {
        int count;
        final int[] start = new int[SIZE];
        final int[] end = new int[SIZE];
        final int[] doc = new int[SIZE];
        boolean continues;
        boolean carries;
        final int[] rowStart = new int[SIZE];
        final int[] rowEnd = new int[SIZE];
        /**
         * The chunk's {@code Aqk} and {@code (I + A)⁻¹} are block diagonal by document: the products with them (or
         * their transposes) skip the pairs of rows of different documents, all stored zeros.
         */
        final ChunkMath.Structure lower = ChunkMath.Structure.lowerA(rowStart);
        final ChunkMath.Structure upper = ChunkMath.Structure.upperA(rowEnd);

        /**
         * Lays out the chunk of tokens {@code from … from+len−1} of the documents {@code firstDoc … endDoc−1} of
         * {@code segments} (which cover those tokens contiguously).
         */
        void layOut(Segments segments, int firstDoc, int endDoc, int from, int len) {
            // The first document that ends past `from`, by bisection over the ends (non-decreasing).
            int lo = firstDoc;
            int hi = endDoc - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (segments.end(mid) > from) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            int to = from + len;
            count = 0;
            for (int n = lo; n < endDoc && segments.start(n) < to; n++) {
                if (segments.length(n) == 0) {
                    continue;
                }
                int r0 = Math.max(segments.start(n), from) - from;
                int r1 = Math.min(segments.end(n), to) - from;
                start[count] = r0;
                end[count] = r1;
                doc[count] = n;
                Arrays.fill(rowStart, r0, r1, r0);
                Arrays.fill(rowEnd, r0, r1, r1);
                count++;
            }
            if (count == 0 || start[0] != 0 || end[count - 1] != len) {
                throw new IllegalStateException("documents " + firstDoc + " … " + (endDoc - 1)
                        + " do not cover tokens " + from + " … " + (to - 1));
            }
            continues = segments.start(doc[0]) < from;
            carries = segments.end(doc[count - 1]) > to;
        }
    }

    /** What the forward computes before the outputs, kept so that the backward need not recompute it. */
    static final class Intermediates {
        final int kd;
        final int vd;
        final float[] pairKK;
        final float[] aQK;
        final float[] inverse;
        final float[] w;
        final float[] u;
        final float[] vNew;

        Intermediates(int kd, int vd) {
            this.kd = kd;
            this.vd = vd;
            pairKK = new float[SIZE * SIZE];
            aQK = new float[SIZE * SIZE];
            inverse = new float[SIZE * SIZE];
            w = new float[SIZE * kd];
            u = new float[SIZE * vd];
            vNew = new float[SIZE * vd];
        }

        /** Floats held for key dim {@code kd} and value dim {@code vd}. */
        static long floats(int kd, int vd) {
            return 3L * SIZE * SIZE + SIZE * kd + 2L * SIZE * vd;
        }
    }
}
