package io.kdapack.core.kda;

import static io.kdapack.core.kda.ChunkMath.axpy;
import static io.kdapack.core.kda.ChunkMath.dot;
import static io.kdapack.core.kda.ChunkMath.multiply;
import static io.kdapack.core.kda.ChunkMath.multiplyAdd;

import io.kdapack.core.linalg.Gemm;
import java.util.Arrays;

/**
 * One chunk of at most {@value #SIZE} tokens of one (sequence, value head), forward and backward, in the
 * WY/UT form of DESIGN §2; the scratch buffers of one task, reused chunk after chunk (not thread-safe).
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
 * zeros rather than overflow. The {@code L×K×V}-shaped products go through {@link Gemm}.
 */
final class KdaChunk {

    static final int SIZE = 64;

    private final int kd;
    private final int vd;
    // Forward intermediates, rows [L, ·].
    private final float[] expPrefix;
    private final float[] expSuffix;
    private final float[] expLast;
    private final float[] qg;
    private final float[] kg;
    private final float[] kDecayed;
    private final float[] pairKK;
    private final float[] a;
    private final float[] aQK;
    private final float[] w;
    private final float[] u;
    private final float[] vNew;
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
    private final float[] inverse;
    private final float[] kb;
    private final float[] vb;
    private final double[] suffixSum;

    KdaChunk(int keyDim, int valueDim) {
        kd = keyDim;
        vd = valueDim;
        expPrefix = new float[SIZE * kd];
        expSuffix = new float[SIZE * kd];
        expLast = new float[kd];
        qg = new float[SIZE * kd];
        kg = new float[SIZE * kd];
        kDecayed = new float[SIZE * kd];
        pairKK = new float[SIZE * SIZE];
        a = new float[SIZE * SIZE];
        aQK = new float[SIZE * SIZE];
        w = new float[SIZE * kd];
        u = new float[SIZE * vd];
        vNew = new float[SIZE * vd];
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
        inverse = new float[SIZE * SIZE];
        kb = new float[SIZE * kd];
        vb = new float[SIZE * vd];
        suffixSum = new double[kd];
    }

    /** Whether this scratch serves heads of key dim {@code keyDim} and value dim {@code valueDim}. */
    boolean fits(int keyDim, int valueDim) {
        return kd == keyDim && vd == valueDim;
    }

    /**
     * Forward of the chunk of {@code len} tokens starting at row {@code first} of {@code s}: adds the
     * outputs to {@code o [L_seq,V]} (unless null) and advances {@code state [K,V]} in place.
     */
    void forward(HeadParallelBackend.HeadSequence s, int first, int len, float[] state, float[] o) {
        prepare(s, first, len, state);
        if (o != null) {
            // O = Qg S + Aqk V' (Aqk is zero above the diagonal)
            Gemm.sgemm(false, false, len, vd, kd, 1f, qg, 0, kd, state, 0, vd, 1f, o, first * vd, vd);
            Gemm.sgemm(false, false, len, vd, len, 1f, aQK, 0, SIZE, vNew, 0, vd, 1f, o, first * vd, vd);
        }
        // S ← diag(e) S + Kdᵀ V'
        for (int i = 0; i < kd; i++) {
            float decay = expLast[i];
            for (int j = 0; j < vd; j++) {
                state[i * vd + j] *= decay;
            }
        }
        Gemm.sgemm(true, false, kd, vd, len, 1f, kDecayed, 0, kd, vNew, 0, vd, 1f, state, 0, vd);
    }

    /**
     * Backward of the chunk given the state {@code s0 [K,V]} it started from. {@code dState [K,V]} holds
     * the gradient of the chunk's final state on entry and of {@code s0} on return; gradients of the
     * chunk's rows are written into {@code grads}.
     */
    void backward(HeadParallelBackend.HeadSequence s, int first, int len, float[] s0, float[] dO,
                  float[] dState, HeadParallelBackend.HeadGradients grads) {
        prepare(s, first, len, s0);
        int dOff = first * vd;
        // Through S1 = diag(e) S0 + Kdᵀ V'.
        Gemm.sgemm(false, false, len, vd, kd, 1f, kDecayed, 0, kd, dState, 0, vd, 0f, dVNew, 0, vd);
        Gemm.sgemm(false, true, len, kd, vd, 1f, vNew, 0, vd, dState, 0, vd, 0f, dKDecayed, 0, kd);
        int lastRow = (len - 1) * kd;
        Arrays.fill(dGamma, 0, len * kd, 0f);
        for (int i = 0; i < kd; i++) {
            dGamma[lastRow + i] += expLast[i] * dot(vd, s0, i * vd, dState, i * vd);
            for (int j = 0; j < vd; j++) {
                dS0[i * vd + j] = expLast[i] * dState[i * vd + j];
            }
        }
        // Through O = Qg S0 + Aqk V'.
        Gemm.sgemm(false, true, len, kd, vd, 1f, dO, dOff, vd, s0, 0, vd, 0f, dQg, 0, kd);
        Gemm.sgemm(true, false, kd, vd, len, 1f, qg, 0, kd, dO, dOff, vd, 1f, dS0, 0, vd);
        // dAqk = dO V'ᵀ (only c ≤ r is read), dV' += Aqkᵀ dO.
        Gemm.sgemm(false, true, len, len, vd, 1f, dO, dOff, vd, vNew, 0, vd, 0f, dAQK, 0, SIZE);
        Gemm.sgemm(true, false, len, vd, len, 1f, aQK, 0, SIZE, dO, dOff, vd, 1f, dVNew, 0, vd);
        // Through V' = U − W S0.
        Gemm.sgemm(false, true, len, kd, vd, -1f, dVNew, 0, vd, s0, 0, vd, 0f, dW, 0, kd);
        Gemm.sgemm(true, false, kd, vd, len, -1f, w, 0, kd, dVNew, 0, vd, 1f, dS0, 0, vd);
        // Through U = (I + A)⁻¹ diag(β) V and W likewise: dVb = (I + A)⁻ᵀ dU, dA = −(dVb Uᵀ + dKb Wᵀ).
        Gemm.sgemm(true, false, len, vd, len, 1f, inverse, 0, SIZE, dVNew, 0, vd, 0f, dVb, 0, vd);
        Gemm.sgemm(true, false, len, kd, len, 1f, inverse, 0, SIZE, dW, 0, kd, 0f, dKb, 0, kd);
        // dA (only c < r is read).
        Gemm.sgemm(false, true, len, len, vd, -1f, dVb, 0, vd, u, 0, vd, 0f, dA, 0, SIZE);
        Gemm.sgemm(false, true, len, len, kd, -1f, dKb, 0, kd, w, 0, kd, 1f, dA, 0, SIZE);
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            float dBeta = dot(vd, s.v(), (first + r) * vd, dVb, r * vd) + dot(kd, kg, r * kd, dKb, r * kd);
            for (int c = 0; c < r; c++) {
                float dAr = dA[r * SIZE + c];
                dBeta += dAr * pairKK[r * SIZE + c];
                dA[r * SIZE + c] = beta * dAr; // now the gradient of P
            }
            grads.dBeta()[first + r] = dBeta;
            for (int j = 0; j < vd; j++) {
                grads.dv()[(first + r) * vd + j] = beta * dVb[r * vd + j];
            }
            for (int i = 0; i < kd; i++) {
                dKb[r * kd + i] *= beta; // now the gradient of Kg
            }
        }
        pairs.backward(s.q(), s.k(), s.g(), first, len, dAQK, dA, grads.dq(), grads.dk(), dGamma);
        elementwiseBackward(s, first, len, grads);
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
            ChunkMath.exp(kd, run, 0, expPrefix, r * kd);
        }
        System.arraycopy(expPrefix, (len - 1) * kd, expLast, 0, kd);
        Arrays.fill(run, 0f);
        for (int r = len - 1; r >= 0; r--) {
            ChunkMath.exp(kd, run, 0, expSuffix, r * kd);
            axpy(kd, 1f, g, (first + r) * kd, run, 0);
        }
        multiply(len * kd, s.q(), first * kd, expPrefix, 0, qg, 0);
        multiply(len * kd, s.k(), first * kd, expPrefix, 0, kg, 0);
        multiply(len * kd, s.k(), first * kd, expSuffix, 0, kDecayed, 0);
        pairs.forward(s.q(), s.k(), s.g(), first, len, aQK, pairKK);
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            for (int c = 0; c < r; c++) {
                a[r * SIZE + c] = beta * pairKK[r * SIZE + c];
            }
            Arrays.fill(aQK, r * SIZE + r + 1, r * SIZE + len, 0f); // Aqk enters products as a full matrix
        }
        invertUnitLower(len);
        // W = (I + A)⁻¹ diag(β) Kg, U = (I + A)⁻¹ diag(β) V.
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            for (int i = 0; i < kd; i++) {
                kb[r * kd + i] = beta * kg[r * kd + i];
            }
            for (int j = 0; j < vd; j++) {
                vb[r * vd + j] = beta * s.v()[(first + r) * vd + j];
            }
        }
        Gemm.sgemm(false, false, len, kd, len, 1f, inverse, 0, SIZE, kb, 0, kd, 0f, w, 0, kd);
        Gemm.sgemm(false, false, len, vd, len, 1f, inverse, 0, SIZE, vb, 0, vd, 0f, u, 0, vd);
        System.arraycopy(u, 0, vNew, 0, len * vd);
        Gemm.sgemm(false, false, len, vd, kd, -1f, w, 0, kd, state, 0, vd, 1f, vNew, 0, vd);
    }

    /** Backward of {@code Qg = Q ⊙ exp(Γ)}, {@code Kg = K ⊙ exp(Γ)}, {@code Kd = K ⊙ exp(Γ_last − Γ)}. */
    private void elementwiseBackward(HeadParallelBackend.HeadSequence s, int first, int len,
                                     HeadParallelBackend.HeadGradients grads) {
        int lastRow = (len - 1) * kd;
        for (int r = 0; r < len; r++) {
            int off = r * kd;
            int rowOff = (first + r) * kd;
            multiplyAdd(kd, dQg, off, expPrefix, off, grads.dq(), rowOff);
            multiplyAdd(kd, dKb, off, expPrefix, off, grads.dk(), rowOff);
            multiplyAdd(kd, dKDecayed, off, expSuffix, off, grads.dk(), rowOff);
            for (int i = 0; i < kd; i++) {
                float fromKd = kDecayed[off + i] * dKDecayed[off + i];
                dGamma[off + i] += qg[off + i] * dQg[off + i] + kg[off + i] * dKb[off + i] - fromKd;
                dGamma[lastRow + i] += fromKd;
            }
        }
    }

    /**
     * {@code inverse = (I + A)⁻¹}, unit lower triangular (zero above the diagonal up to column len), by
     * forward substitution over rows: {@code T_r = e_r − Σ_{c<r} A[r,c] T_c}, where row c has support
     * {@code 0 … c}.
     */
    private void invertUnitLower(int len) {
        for (int r = 0; r < len; r++) {
            int row = r * SIZE;
            Arrays.fill(inverse, row, row + len, 0f);
            inverse[row + r] = 1f;
            for (int c = 0; c < r; c++) {
                float arc = a[row + c];
                if (arc != 0f) {
                    axpy(c + 1, -arc, inverse, c * SIZE, inverse, row);
                }
            }
        }
    }
}
