package io.kdapack.core.kda;

import static io.kdapack.core.kda.ChunkMath.Structure.LOWER_A;
import static io.kdapack.core.kda.ChunkMath.Structure.LOWER_C;
import static io.kdapack.core.kda.ChunkMath.Structure.UPPER_A;
import static io.kdapack.core.kda.ChunkMath.axpy;
import static io.kdapack.core.kda.ChunkMath.dot;
import static io.kdapack.core.kda.ChunkMath.multiply;
import static io.kdapack.core.kda.ChunkMath.multiplyAdd;
import static io.kdapack.core.kda.ChunkMath.scale;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;

/**
 * One chunk of at most {@value #SIZE} tokens of one (sequence, value head), forward and backward, in the
 * WY/UT form of architecture §2; the scratch buffers of one task, reused chunk after chunk (not thread-safe).
 *
 * <p>With {@code Γ} the gate cumsum restarted at the chunk start ({@code [L,K]}), {@code L ≤ 64}:
 * <pre>
 *   Qg = Q ⊙ exp(Γ)   Kg = K ⊙ exp(Γ)   Kd = K ⊙ exp(Γ_last − Γ)   e = exp(Γ_last)
 *   P[r,c]   = Σ_d k_r k_c exp(Γ_r − Γ_c)   (c &lt; r)      A = diag(β) P
 *   Aqk[r,c] = Σ_d q_r k_c exp(Γ_r − Γ_c)   (c ≤ r)
 *   W = (I + A)⁻¹ diag(β) Kg,  U = (I + A)⁻¹ diag(β) V   (the inverse by forward substitution)
 *   V' = U − W S     O = Qg S + Aqk V'     S ← diag(e) S + Kdᵀ V'
 * </pre>
 * Every exponent is a sum of gates ({@code ≤ 0}) formed before {@code exp}: prefix sums for
 * {@code exp(Γ)}, suffix sums for {@code exp(Γ_last − Γ)}, sums between rows for the pairwise factors
 * ({@link PairwiseDecay}), so no difference of two large cumsums ever cancels and gates of −1000 give exact
 * zeros rather than overflow. The products are register-tiled Vector API kernels ({@link ChunkMath#matmul})
 * on the chunk's small, cache-resident blocks, where packing for a general GEMM would cost as much as the
 * product.
 */
public final class KdaChunk {

    public static final int SIZE = 64;
    /** Rows per block of the triangular inverse. */
    private static final int INVERSE_BLOCK = 16;

    private final int kd;
    private final int vd;
    /** The forward intermediates in use: {@link #own}, or one kept by the caller. */
    private Intermediates p;
    private final Intermediates own;
    private final float[] a;
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
    private final float[] run;
    private final float[] dS0;
    private final float[] kb;
    private final float[] vb;
    private final float[] transposed;
    private final float[] s0Transposed;
    private final float[] dStateTransposed;
    private final float[] blockRows;
    private final double[] suffixSum;

    KdaChunk(int keyDim, int valueDim) {
        kd = keyDim;
        vd = valueDim;
        own = new Intermediates(keyDim, valueDim);
        p = own;
        a = new float[SIZE * SIZE];
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
        run = new float[kd];
        dS0 = new float[kd * vd];
        kb = new float[SIZE * kd];
        vb = new float[SIZE * vd];
        transposed = new float[Math.max(kd, vd) * Math.max(SIZE, Math.max(kd, vd))];
        s0Transposed = new float[kd * vd];
        dStateTransposed = new float[kd * vd];
        blockRows = new float[INVERSE_BLOCK * SIZE];
        suffixSum = new double[kd];
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
     * Forward of the chunk of {@code len} tokens starting at row {@code first} of {@code s}'s tensors: writes
     * the outputs to the same rows of {@code o [HV·T,V]} (unless null) and advances {@code state [K,V]} in
     * place. The forward intermediates go to {@code keep} when given, for a later {@link #backward} of the
     * same chunk.
     */
    void forward(HeadParallelBackend.HeadSequence s, int first, int len, float[] state, float[] o,
                 Intermediates keep) {
        p = keep != null ? keep : own;
        prepare(s, first, len, state);
        if (o != null) {
            // O = Qg S + Aqk V' (Aqk is zero above the diagonal)
            ChunkMath.matmul(false, len, vd, kd, 1f, p.qg, 0, kd, state, 0, vd, 0f, o, first * vd, vd);
            ChunkMath.matmul(LOWER_A, false, len, vd, len, 1f, p.aQK, 0, SIZE, p.vNew, 0, vd, 1f, o, first * vd, vd);
        }
        // S ← diag(e) S + Kdᵀ V'
        for (int i = 0; i < kd; i++) {
            scale(vd, p.expLast[i], state, i * vd, state, i * vd);
        }
        ChunkMath.matmul(true, kd, vd, len, 1f, p.kDecayed, 0, kd, p.vNew, 0, vd, 1f, state, 0, vd);
    }

    /**
     * Backward of the chunk given the state {@code s0 [K,V]} it started from. {@code dState [K,V]} holds
     * the gradient of the chunk's final state on entry and of {@code s0} on return; gradients of the
     * chunk's rows are written into {@code grads}. {@code kept} holds the chunk's forward intermediates
     * from {@link #forward}, or is null to recompute them.
     */
    void backward(HeadParallelBackend.HeadSequence s, int first, int len, float[] s0, float[] dO,
                  float[] dState, HeadParallelBackend.HeadGradients grads, Intermediates kept) {
        if (kept != null) {
            p = kept;
        } else {
            p = own;
            prepare(s, first, len, s0);
        }
        int dOff = first * vd;
        // dq and dk collect several terms below; dv, dβ and dg are written once.
        Arrays.fill(grads.dq(), first * kd, (first + len) * kd, 0f);
        Arrays.fill(grads.dk(), first * kd, (first + len) * kd, 0f);
        // Through S1 = diag(e) S0 + Kdᵀ V'.
        ChunkMath.matmul(false, len, vd, kd, 1f, p.kDecayed, 0, kd, dState, 0, vd, 0f, dVNew, 0, vd);
        ChunkMath.transpose(kd, vd, dState, 0, vd, dStateTransposed);
        ChunkMath.transpose(kd, vd, s0, 0, vd, s0Transposed);
        ChunkMath.matmul(false, len, kd, vd, 1f, p.vNew, 0, vd, dStateTransposed, 0, kd, 0f, dKDecayed, 0, kd);
        // dΓ_last = e ⊙ Σ_j S0[:,j] ⊙ dS[:,j], summed along j over the transposed states (no lane sums).
        Arrays.fill(run, 0f);
        for (int j = 0; j < vd; j++) {
            multiplyAdd(kd, s0Transposed, j * kd, dStateTransposed, j * kd, run, 0);
        }
        Arrays.fill(dGamma, 0, len * kd, 0f);
        multiply(kd, p.expLast, 0, run, 0, dGamma, (len - 1) * kd);
        for (int i = 0; i < kd; i++) {
            scale(vd, p.expLast[i], dState, i * vd, dS0, i * vd);
        }
        // Through O = Qg S0 + Aqk V'.
        ChunkMath.matmul(false, len, kd, vd, 1f, dO, dOff, vd, s0Transposed, 0, kd, 0f, dQg, 0, kd);
        ChunkMath.matmul(true, kd, vd, len, 1f, p.qg, 0, kd, dO, dOff, vd, 1f, dS0, 0, vd);
        // dAqk = dO V'ᵀ (only c ≤ r is read), dV' += Aqkᵀ dO.
        // The lower-triangular results are computed over whole column tiles (`width`): their columns past len
        // come from the stale rows past len of V', U, W and are never read.
        int width = ChunkMath.paddedWidth(len, SIZE);
        ChunkMath.matmulTransB(LOWER_C, len, width, vd, 1f, dO, dOff, vd, p.vNew, 0, vd, 0f, dAQK, 0, SIZE, transposed);
        ChunkMath.matmul(UPPER_A, true, len, vd, len, 1f, p.aQK, 0, SIZE, dO, dOff, vd, 1f, dVNew, 0, vd);
        // Through V' = U − W S0.
        ChunkMath.matmul(false, len, kd, vd, -1f, dVNew, 0, vd, s0Transposed, 0, kd, 0f, dW, 0, kd);
        ChunkMath.matmul(true, kd, vd, len, -1f, p.w, 0, kd, dVNew, 0, vd, 1f, dS0, 0, vd);
        // Through U = (I + A)⁻¹ diag(β) V and W likewise: dVb = (I + A)⁻ᵀ dU, dA = −(dVb Uᵀ + dKb Wᵀ).
        ChunkMath.matmul(UPPER_A, true, len, vd, len, 1f, p.inverse, 0, SIZE, dVNew, 0, vd, 0f, dVb, 0, vd);
        ChunkMath.matmul(UPPER_A, true, len, kd, len, 1f, p.inverse, 0, SIZE, dW, 0, kd, 0f, dKb, 0, kd);
        // dA (only c < r is read).
        ChunkMath.matmulTransB(LOWER_C, len, width, vd, -1f, dVb, 0, vd, p.u, 0, vd, 0f, dA, 0, SIZE, transposed);
        ChunkMath.matmulTransB(LOWER_C, len, width, kd, -1f, dKb, 0, kd, p.w, 0, kd, 1f, dA, 0, SIZE, transposed);
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            grads.dBeta()[first + r] = dot(vd, s.v(), (first + r) * vd, dVb, r * vd)
                    + dot(kd, p.kg, r * kd, dKb, r * kd) + dot(r, dA, r * SIZE, p.pairKK, r * SIZE);
            scale(r, beta, dA, r * SIZE, dA, r * SIZE); // now the gradient of P
            scale(vd, beta, dVb, r * vd, grads.dv(), (first + r) * vd);
            scale(kd, beta, dKb, r * kd, dKb, r * kd); // now the gradient of Kg
        }
        pairs.backward(s.q(), s.k(), s.g(), first, len, dAQK, dA, grads.dq(), grads.dk(), dGamma);
        elementwiseBackward(first, len, grads);
        // dg_t = Σ_{r ≥ t} dΓ_r within the chunk, summed in double: the terms cancel heavily.
        Arrays.fill(suffixSum, 0.0);
        for (int r = len - 1; r >= 0; r--) {
            for (int i = 0; i < kd; i++) {
                suffixSum[i] += dGamma[r * kd + i];
                grads.dg()[(first + r) * kd + i] = (float) suffixSum[i];
            }
        }
        System.arraycopy(dS0, 0, dState, 0, kd * vd);
    }

    /** Computes every forward intermediate up to V' for the chunk that starts from {@code state}. */
    private void prepare(HeadParallelBackend.HeadSequence s, int first, int len, float[] state) {
        float[] g = s.g();
        Arrays.fill(run, 0f);
        for (int r = 0; r < len; r++) {
            axpy(kd, 1f, g, (first + r) * kd, run, 0);
            ChunkMath.exp(kd, run, 0, p.expPrefix, r * kd);
        }
        System.arraycopy(p.expPrefix, (len - 1) * kd, p.expLast, 0, kd);
        Arrays.fill(run, 0f);
        for (int r = len - 1; r >= 0; r--) {
            ChunkMath.exp(kd, run, 0, p.expSuffix, r * kd);
            axpy(kd, 1f, g, (first + r) * kd, run, 0);
        }
        multiply(len * kd, s.q(), first * kd, p.expPrefix, 0, p.qg, 0);
        multiply(len * kd, s.k(), first * kd, p.expPrefix, 0, p.kg, 0);
        multiply(len * kd, s.k(), first * kd, p.expSuffix, 0, p.kDecayed, 0);
        pairs.forward(s.q(), s.k(), s.g(), first, len, p.aQK, p.pairKK);
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            scale(r, beta, p.pairKK, r * SIZE, a, r * SIZE);
            Arrays.fill(p.aQK, r * SIZE + r + 1, r * SIZE + len, 0f); // Aqk enters products as a full matrix
            // The right-hand sides of W = (I + A)⁻¹ diag(β) Kg and U = (I + A)⁻¹ diag(β) V.
            scale(kd, beta, p.kg, r * kd, kb, r * kd);
            scale(vd, beta, s.v(), (first + r) * vd, vb, r * vd);
        }
        invertUnitLower(len);
        ChunkMath.matmul(LOWER_A, false, len, kd, len, 1f, p.inverse, 0, SIZE, kb, 0, kd, 0f, p.w, 0, kd);
        ChunkMath.matmul(LOWER_A, false, len, vd, len, 1f, p.inverse, 0, SIZE, vb, 0, vd, 0f, p.u, 0, vd);
        System.arraycopy(p.u, 0, p.vNew, 0, len * vd);
        ChunkMath.matmul(false, len, vd, kd, -1f, p.w, 0, kd, state, 0, vd, 1f, p.vNew, 0, vd);
    }

    /** Backward of {@code Qg = Q ⊙ exp(Γ)}, {@code Kg = K ⊙ exp(Γ)}, {@code Kd = K ⊙ exp(Γ_last − Γ)}. */
    private void elementwiseBackward(int first, int len, HeadParallelBackend.HeadGradients grads) {
        int rows = first * kd;
        multiplyAdd(len * kd, dQg, 0, p.expPrefix, 0, grads.dq(), rows);
        multiplyAdd(len * kd, dKb, 0, p.expPrefix, 0, grads.dk(), rows);
        multiplyAdd(len * kd, dKDecayed, 0, p.expSuffix, 0, grads.dk(), rows);
        // dΓ_r += Qg⊙dQg + Kg⊙dKg − Kd⊙dKd per row; Γ_last also collects Σ_r Kd⊙dKd (in run).
        Arrays.fill(run, 0f);
        for (int r = 0; r < len; r++) {
            int off = r * kd;
            int i = 0;
            for (int bound = ChunkMath.SPECIES.loopBound(kd); i < bound; i += ChunkMath.SPECIES.length()) {
                FloatVector fromKd = FloatVector.fromArray(ChunkMath.SPECIES, p.kDecayed, off + i)
                        .mul(FloatVector.fromArray(ChunkMath.SPECIES, dKDecayed, off + i));
                FloatVector.fromArray(ChunkMath.SPECIES, p.qg, off + i)
                        .fma(FloatVector.fromArray(ChunkMath.SPECIES, dQg, off + i),
                                FloatVector.fromArray(ChunkMath.SPECIES, dGamma, off + i))
                        .add(FloatVector.fromArray(ChunkMath.SPECIES, p.kg, off + i)
                                .mul(FloatVector.fromArray(ChunkMath.SPECIES, dKb, off + i)))
                        .sub(fromKd)
                        .intoArray(dGamma, off + i);
                fromKd.add(FloatVector.fromArray(ChunkMath.SPECIES, run, i)).intoArray(run, i);
            }
            for (; i < kd; i++) {
                float fromKd = p.kDecayed[off + i] * dKDecayed[off + i];
                dGamma[off + i] = Math.fma(p.qg[off + i], dQg[off + i], dGamma[off + i])
                        + p.kg[off + i] * dKb[off + i] - fromKd;
                run[i] += fromKd;
            }
        }
        ChunkMath.axpy(kd, 1f, run, 0, dGamma, (len - 1) * kd);
    }

    /**
     * {@code inverse = (I + A)⁻¹}, unit lower triangular (zero above the diagonal up to column len), by blocks
     * of {@value #INVERSE_BLOCK} rows: the diagonal block {@code T_ii} by forward substitution over its rows
     * ({@code T_r = e_r − Σ_{c<r} A[r,c] T_c}), then the block's left part from the rows above,
     * {@code T_i,<i = −T_ii · (A_i,<i · T_<i,<i)}, as two products.
     */
    private void invertUnitLower(int len) {
        for (int r0 = 0; r0 < len; r0 += INVERSE_BLOCK) {
            int rows = Math.min(INVERSE_BLOCK, len - r0);
            for (int r = r0; r < r0 + rows; r++) {
                int row = r * SIZE;
                Arrays.fill(p.inverse, row, row + len, 0f);
                p.inverse[row + r] = 1f;
                for (int c = r0; c < r; c++) {
                    float arc = a[row + c];
                    if (arc != 0f) {
                        axpy(c - r0 + 1, -arc, p.inverse, c * SIZE + r0, p.inverse, row + r0);
                    }
                }
            }
            if (r0 > 0) {
                ChunkMath.matmul(false, rows, r0, r0, 1f, a, r0 * SIZE, SIZE, p.inverse, 0, SIZE, 0f,
                        blockRows, 0, SIZE);
                ChunkMath.matmul(LOWER_A, false, rows, r0, rows, -1f, p.inverse, r0 * SIZE + r0, SIZE, blockRows, 0,
                        SIZE, 0f, p.inverse, r0 * SIZE, SIZE);
            }
        }
    }

    /** What the forward computes before the outputs, kept so that the backward need not recompute it. */
    static final class Intermediates {
        final int kd;
        final int vd;
        final float[] expPrefix;
        final float[] expSuffix;
        final float[] expLast;
        final float[] qg;
        final float[] kg;
        final float[] kDecayed;
        final float[] pairKK;
        final float[] aQK;
        final float[] inverse;
        final float[] w;
        final float[] u;
        final float[] vNew;

        Intermediates(int kd, int vd) {
            this.kd = kd;
            this.vd = vd;
            expPrefix = new float[SIZE * kd];
            expSuffix = new float[SIZE * kd];
            expLast = new float[kd];
            qg = new float[SIZE * kd];
            kg = new float[SIZE * kd];
            kDecayed = new float[SIZE * kd];
            pairKK = new float[SIZE * SIZE];
            aQK = new float[SIZE * SIZE];
            inverse = new float[SIZE * SIZE];
            w = new float[SIZE * kd];
            u = new float[SIZE * vd];
            vNew = new float[SIZE * vd];
        }

        /** Floats held for key dim {@code kd} and value dim {@code vd}. */
        static long floats(int kd, int vd) {
            return 3L * SIZE * SIZE + 6L * SIZE * kd + kd + 2L * SIZE * vd;
        }
    }
}
