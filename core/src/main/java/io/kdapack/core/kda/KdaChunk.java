package io.kdapack.core.kda;

import static io.kdapack.core.kda.ChunkMath.axpy;
import static io.kdapack.core.kda.ChunkMath.dot;
import static io.kdapack.core.kda.ChunkMath.mulAdd;
import static io.kdapack.core.kda.ChunkMath.mulTransAAdd;
import static io.kdapack.core.kda.ChunkMath.mulTransBAdd;
import static io.kdapack.core.kda.ChunkMath.multiply;
import static io.kdapack.core.kda.ChunkMath.multiplyAdd;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;

/**
 * One chunk of at most {@value #SIZE} tokens of one (sequence, value head), forward and backward, in the
 * WY/UT form of DESIGN §2; the scratch buffers of one task, reused chunk after chunk (not thread-safe).
 *
 * <p>With {@code Γ} the gate cumsum restarted at the chunk start ({@code [L,K]}), {@code L ≤ 64}:
 * <pre>
 *   Qg = Q ⊙ exp(Γ)   Kg = K ⊙ exp(Γ)   Kd = K ⊙ exp(Γ_last − Γ)   e = exp(Γ_last)
 *   P[r,c]   = Σ_d k_r k_c exp(Γ_r − Γ_c)   (c &lt; r)      A = diag(β) P
 *   Aqk[r,c] = Σ_d q_r k_c exp(Γ_r − Γ_c)   (c ≤ r)
 *   (I + A) W = diag(β) Kg,  (I + A) U = diag(β) V       (forward substitution)
 *   V' = U − W S     O = Qg S + Aqk V'     S ← diag(e) S + Kdᵀ V'
 * </pre>
 * Every exponent is a sum of gates ({@code ≤ 0}) formed before {@code exp}: prefix sums for
 * {@code exp(Γ)}, suffix sums for {@code exp(Γ_last − Γ)}, and running sums from row {@code r} down to
 * column {@code c} for the pairwise factors, so no difference of two large cumsums ever cancels and gates
 * of −1000 give exact zeros rather than overflow.
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
    private final float[] dColumn;
    private final float[] run;
    private final float[] e;
    private final float[] dRowQ;
    private final float[] dRowK;
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
        dColumn = new float[SIZE * kd];
        run = new float[kd];
        e = new float[kd];
        dRowQ = new float[kd];
        dRowK = new float[kd];
        suffixSum = new double[kd];
    }

    /**
     * Forward of the chunk of {@code len} tokens starting at row {@code first} of {@code s}: adds the
     * outputs to {@code o [L_seq,V]} (unless null) and advances {@code state [K,V]} in place.
     */
    void forward(HeadParallelBackend.HeadSequence s, int first, int len, float[] state, float[] o) {
        prepare(s, first, len, state);
        if (o != null) {
            // O = Qg S + Aqk V'
            mulAdd(len, kd, vd, 1f, qg, 0, state, 0, o, first * vd);
            for (int r = 0; r < len; r++) {
                for (int c = 0; c <= r; c++) {
                    axpy(vd, aQK[r * SIZE + c], vNew, c * vd, o, (first + r) * vd);
                }
            }
        }
        // S ← diag(e) S + Kdᵀ V'
        for (int i = 0; i < kd; i++) {
            float decay = expLast[i];
            for (int j = 0; j < vd; j++) {
                state[i * vd + j] *= decay;
            }
        }
        mulTransAAdd(kd, len, vd, 1f, kDecayed, 0, vNew, 0, state, 0);
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
        Arrays.fill(dVNew, 0, len * vd, 0f);
        mulAdd(len, kd, vd, 1f, kDecayed, 0, dState, 0, dVNew, 0);
        Arrays.fill(dKDecayed, 0, len * kd, 0f);
        mulTransBAdd(len, vd, kd, 1f, vNew, 0, dState, 0, dKDecayed, 0);
        float[] dS0 = new float[kd * vd];
        Arrays.fill(dGamma, 0, len * kd, 0f);
        int lastRow = (len - 1) * kd;
        for (int i = 0; i < kd; i++) {
            dGamma[lastRow + i] += expLast[i] * dot(vd, s0, i * vd, dState, i * vd);
            for (int j = 0; j < vd; j++) {
                dS0[i * vd + j] = expLast[i] * dState[i * vd + j];
            }
        }
        // Through O = Qg S0 + Aqk V'.
        Arrays.fill(dQg, 0, len * kd, 0f);
        mulTransBAdd(len, vd, kd, 1f, dO, dOff, s0, 0, dQg, 0);
        mulTransAAdd(kd, len, vd, 1f, qg, 0, dO, dOff, dS0, 0);
        for (int r = 0; r < len; r++) {
            for (int c = 0; c <= r; c++) {
                dAQK[r * SIZE + c] = dot(vd, dO, dOff + r * vd, vNew, c * vd);
                axpy(vd, aQK[r * SIZE + c], dO, dOff + r * vd, dVNew, c * vd);
            }
        }
        // Through V' = U − W S0.
        Arrays.fill(dW, 0, len * kd, 0f);
        mulTransBAdd(len, vd, kd, -1f, dVNew, 0, s0, 0, dW, 0);
        mulTransAAdd(kd, len, vd, -1f, w, 0, dVNew, 0, dS0, 0);
        // Through (I + A) U = diag(β) V and (I + A) W = diag(β) Kg: dVb = (I + A)⁻ᵀ dU, dA = −(dVb Uᵀ + dKb Wᵀ).
        solveTransposed(len, dVNew, dVb, vd);
        solveTransposed(len, dW, dKb, kd);
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            float dBeta = dot(vd, s.v(), (first + r) * vd, dVb, r * vd) + dot(kd, kg, r * kd, dKb, r * kd);
            for (int c = 0; c < r; c++) {
                float dAr = -(dot(vd, dVb, r * vd, u, c * vd) + dot(kd, dKb, r * kd, w, c * kd));
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
        pairwiseBackward(s, first, len, grads);
        elementwiseBackward(s, first, len, grads);
        // dg_t = Σ_{r ≥ t} dΓ_r within the chunk, summed in double: the terms cancel heavily.
        Arrays.fill(suffixSum, 0.0);
        for (int r = len - 1; r >= 0; r--) {
            for (int i = 0; i < kd; i++) {
                suffixSum[i] += dGamma[r * kd + i];
                grads.dg()[(first + r) * kd + i] = (float) suffixSum[i];
            }
        }
        System.arraycopy(dS0, 0, dState, 0, dS0.length);
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
        pairwiseForward(s, first, len);
        // Forward substitution: W_r = β_r Kg_r − Σ_{c<r} A[r,c] W_c, likewise U with V.
        for (int r = 0; r < len; r++) {
            float beta = s.beta()[first + r];
            for (int i = 0; i < kd; i++) {
                w[r * kd + i] = beta * kg[r * kd + i];
            }
            for (int j = 0; j < vd; j++) {
                u[r * vd + j] = beta * s.v()[(first + r) * vd + j];
            }
            for (int c = 0; c < r; c++) {
                float arc = a[r * SIZE + c];
                if (arc != 0f) {
                    axpy(kd, -arc, w, c * kd, w, r * kd);
                    axpy(vd, -arc, u, c * vd, u, r * vd);
                }
            }
        }
        System.arraycopy(u, 0, vNew, 0, len * vd);
        mulAdd(len, kd, vd, -1f, w, 0, state, 0, vNew, 0);
    }

    /** {@code P}, {@code A = diag(β) P} and {@code Aqk}, with the pairwise decays summed from row r down. */
    private void pairwiseForward(HeadParallelBackend.HeadSequence s, int first, int len) {
        float[] q = s.q();
        float[] k = s.k();
        float[] g = s.g();
        for (int r = 0; r < len; r++) {
            int rowOff = (first + r) * kd;
            Arrays.fill(run, 0f);
            for (int c = r; c >= 0; c--) {
                int colOff = (first + c) * kd;
                int i = 0;
                FloatVector sumQ = FloatVector.zero(ChunkMath.SPECIES);
                FloatVector sumK = FloatVector.zero(ChunkMath.SPECIES);
                for (int bound = ChunkMath.SPECIES.loopBound(kd); i < bound; i += ChunkMath.SPECIES.length()) {
                    FloatVector runV = FloatVector.fromArray(ChunkMath.SPECIES, run, i);
                    FloatVector t = ChunkMath.exp(runV).mul(FloatVector.fromArray(ChunkMath.SPECIES, k, colOff + i));
                    sumQ = FloatVector.fromArray(ChunkMath.SPECIES, q, rowOff + i).fma(t, sumQ);
                    sumK = FloatVector.fromArray(ChunkMath.SPECIES, k, rowOff + i).fma(t, sumK);
                    runV.add(FloatVector.fromArray(ChunkMath.SPECIES, g, colOff + i)).intoArray(run, i);
                }
                float dotQ = ChunkMath.sumLanes(sumQ);
                float dotK = ChunkMath.sumLanes(sumK);
                for (; i < kd; i++) {
                    float t = (float) Math.exp(run[i]) * k[colOff + i];
                    dotQ += q[rowOff + i] * t;
                    dotK += k[rowOff + i] * t;
                    run[i] += g[colOff + i];
                }
                aQK[r * SIZE + c] = dotQ;
                pairKK[r * SIZE + c] = c < r ? dotK : 0f;
            }
            float beta = s.beta()[first + r];
            for (int c = 0; c < r; c++) {
                a[r * SIZE + c] = beta * pairKK[r * SIZE + c];
            }
        }
    }

    /**
     * Backward of {@code M[r,c] = Σ_d x_r y_c exp(Γ_r − Γ_c)} for {@code Aqk} (x = q, y = k, gradient in
     * {@code dAQK}) and {@code P} (x = y = k, gradient in {@code dA}):
     * {@code dx_r = Σ_c dM[r,c] y_c ⊙ exp(Γ_r − Γ_c)}, {@code dy_c = Σ_r dM[r,c] x_r ⊙ exp(Γ_r − Γ_c)},
     * {@code dΓ_r += x_r ⊙ dx_r}, {@code dΓ_c −= y_c ⊙ dy_c}.
     */
    private void pairwiseBackward(HeadParallelBackend.HeadSequence s, int first, int len,
                                  HeadParallelBackend.HeadGradients grads) {
        float[] q = s.q();
        float[] k = s.k();
        float[] g = s.g();
        Arrays.fill(dColumn, 0, len * kd, 0f);
        for (int r = 0; r < len; r++) {
            int rowOff = (first + r) * kd;
            Arrays.fill(run, 0f);
            Arrays.fill(dRowQ, 0f);
            Arrays.fill(dRowK, 0f);
            for (int c = r; c >= 0; c--) {
                int colOff = (first + c) * kd;
                float gradQ = dAQK[r * SIZE + c];
                float gradK = c < r ? dA[r * SIZE + c] : 0f;
                ChunkMath.exp(kd, run, 0, e, 0);
                for (int i = 0; i < kd; i++) {
                    float t = e[i] * k[colOff + i];
                    dRowQ[i] += gradQ * t;
                    dRowK[i] += gradK * t;
                    dColumn[c * kd + i] += (gradQ * q[rowOff + i] + gradK * k[rowOff + i]) * e[i];
                }
                axpy(kd, 1f, g, colOff, run, 0);
            }
            multiplyAdd(kd, q, rowOff, dRowQ, 0, dGamma, r * kd);
            multiplyAdd(kd, k, rowOff, dRowK, 0, dGamma, r * kd);
            System.arraycopy(dRowQ, 0, grads.dq(), rowOff, kd);
            System.arraycopy(dRowK, 0, grads.dk(), rowOff, kd);
        }
        for (int c = 0; c < len; c++) {
            int colOff = (first + c) * kd;
            axpy(kd, 1f, dColumn, c * kd, grads.dk(), colOff);
            for (int i = 0; i < kd; i++) {
                dGamma[c * kd + i] -= k[colOff + i] * dColumn[c * kd + i];
            }
        }
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

    /** Solves {@code (I + A)ᵀ X = Y} for {@code X [L,n]} by back substitution. */
    private void solveTransposed(int len, float[] y, float[] x, int n) {
        System.arraycopy(y, 0, x, 0, len * n);
        for (int r = len - 1; r >= 0; r--) {
            for (int j = r + 1; j < len; j++) {
                float ajr = a[j * SIZE + r];
                if (ajr != 0f) {
                    axpy(n, -ajr, x, j * n, x, r * n);
                }
            }
        }
    }
}
