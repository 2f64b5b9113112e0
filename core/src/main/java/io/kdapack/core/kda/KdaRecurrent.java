package io.kdapack.core.kda;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The reference backend: the token-by-token recurrence of architecture §2 and its hand-derived backward, per
 * (sequence, value head). With {@code S̃ = diag(exp(g_t)) S_{t−1}}, {@code w = v_t − S̃ᵀ k_t},
 * {@code u = β_t w}, {@code S_t = S̃ + k_t uᵀ}, {@code o_t = S_tᵀ q_t}, the backward walks the tokens in
 * reverse with {@code dS} the gradient of {@code S_t}:
 * <pre>
 *   dS  += q_t do_tᵀ          dq_t = S_t do_t
 *   du   = dSᵀ k_t            dk_t = dS u − S̃ (β du)     dv_t = β du     dβ_t = du·w
 *   dS̃   = dS − k_t (β du)ᵀ   dg_t[i] = Σ_j S̃[i,j] dS̃[i,j]   dS_{t−1} = diag(exp(g_t)) dS̃
 * </pre>
 * States are recomputed from checkpoints kept every {@value #CHECKPOINT} tokens, so memory stays
 * {@code O((L/64 + 64)·K·V)} per head.
 */
public final class KdaRecurrent extends HeadParallelBackend<Void> {

    static final int CHECKPOINT = 64;

    /** A reference backend on all available processors. */
    public KdaRecurrent() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public KdaRecurrent(int threads) {
        super(threads);
    }

    @Override
    public String name() {
        return "cpu-recurrent";
    }

    /** One head after the other; keeps nothing: the reference's backward recomputes the states from checkpoints. */
    @Override
    List<Void> forwardHeads(List<HeadSequence> group, float[] h0, float[] ht, float[] o, Keep keep) {
        for (HeadSequence s : group) {
            forwardHead(s, h0, ht, o);
        }
        return Collections.nCopies(group.size(), null);
    }

    @Override
    void backwardHeads(List<HeadSequence> group, float[] h0, List<Void> kept, float[] dO, float[] dHt, float[] dH0,
                       HeadGradients grads) {
        for (HeadSequence s : group) {
            backwardHead(s, h0, dO, dHt, dH0, grads);
        }
    }

    private static void forwardHead(HeadSequence s, float[] h0, float[] ht, float[] o) {
        float[] state = initialState(s, h0);
        float[] w = new float[s.valueDim()];
        for (int t = s.row0(); t < s.row0() + s.length(); t++) {
            step(s, t, state, 0, w);
            output(s, t, state, o);
        }
        if (ht != null) {
            System.arraycopy(state, 0, ht, s.stateOffset(s.firstDoc()), state.length);
        }
    }

    private static void backwardHead(HeadSequence s, float[] h0, float[] dO, float[] dHt, float[] dH0,
                                     HeadGradients grads) {
        int kd = s.keyDim();
        int vd = s.valueDim();
        int size = kd * vd;
        int len = s.length();
        int doc = s.firstDoc();
        float[] dState = dHt == null ? new float[size]
                : Arrays.copyOfRange(dHt, s.stateOffset(doc), s.stateOffset(doc) + size);
        int blocks = (len + CHECKPOINT - 1) / CHECKPOINT;
        float[] checkpoints = new float[blocks * size];
        float[] state = initialState(s, h0);
        float[] w = new float[vd];
        for (int t = 0; t < len; t++) {
            if (t % CHECKPOINT == 0) {
                System.arraycopy(state, 0, checkpoints, (t / CHECKPOINT) * size, size);
            }
            step(s, s.row0() + t, state, 0, w);
        }
        // states[j] = S after token (blockStart + j − 1); states[0] = the block's entry state.
        float[] states = new float[(CHECKPOINT + 1) * size];
        float[] decayed = new float[size];
        float[] du = new float[vd];
        for (int b = blocks - 1; b >= 0; b--) {
            int first = b * CHECKPOINT;
            int last = Math.min(len, first + CHECKPOINT);
            System.arraycopy(checkpoints, b * size, states, 0, size);
            for (int t = first; t < last; t++) {
                System.arraycopy(states, (t - first) * size, states, (t - first + 1) * size, size);
                step(s, s.row0() + t, states, (t - first + 1) * size, w);
            }
            for (int t = last - 1; t >= first; t--) {
                backwardStep(s, s.row0() + t, states, (t - first) * size, dO, dState, decayed, w, du, grads);
            }
        }
        if (dH0 != null) {
            System.arraycopy(dState, 0, dH0, s.stateOffset(doc), size);
        }
    }

    /** The initial state {@code [K,V]} of the task's one document: a copy of its slice of h0, or zeros. */
    private static float[] initialState(HeadSequence s, float[] h0) {
        int size = s.keyDim() * s.valueDim();
        if (h0 == null) {
            return new float[size];
        }
        int offset = s.stateOffset(s.firstDoc());
        return Arrays.copyOfRange(h0, offset, offset + size);
    }

    /**
     * One token (row {@code t} of the head-major tensors) forward on the state {@code [K,V]} at
     * {@code state[at …]}; leaves {@code w = v − S̃ᵀk} in {@code w}.
     */
    private static void step(HeadSequence s, int t, float[] state, int at, float[] w) {
        int kd = s.keyDim();
        int vd = s.valueDim();
        int kRow = t * kd;
        for (int i = 0; i < kd; i++) {
            float decay = (float) Math.exp(s.g()[kRow + i]);
            for (int j = 0; j < vd; j++) {
                state[at + i * vd + j] *= decay;
            }
        }
        float beta = s.beta()[t];
        for (int j = 0; j < vd; j++) {
            w[j] = s.v()[s.valueOffset(t) + j];
        }
        for (int i = 0; i < kd; i++) {
            float ki = s.k()[kRow + i];
            for (int j = 0; j < vd; j++) {
                w[j] -= ki * state[at + i * vd + j];
            }
        }
        for (int i = 0; i < kd; i++) {
            float ki = s.k()[kRow + i] * beta;
            for (int j = 0; j < vd; j++) {
                state[at + i * vd + j] += ki * w[j];
            }
        }
    }

    /** {@code o_t = S_tᵀ q_t} into token t's row of {@code o [T,HV,V]} (written, not added to). */
    private static void output(HeadSequence s, int t, float[] state, float[] o) {
        int kd = s.keyDim();
        int vd = s.valueDim();
        int oRow = s.valueOffset(t);
        Arrays.fill(o, oRow, oRow + vd, 0f);
        for (int i = 0; i < kd; i++) {
            float qi = s.q()[t * kd + i];
            for (int j = 0; j < vd; j++) {
                o[oRow + j] += qi * state[i * vd + j];
            }
        }
    }

    /**
     * One token backward. {@code states[prev …]} holds {@code S_{t−1}}, the next slot {@code S_t};
     * {@code dS} holds the gradient of {@code S_t} on entry and of {@code S_{t−1}} on return.
     */
    private static void backwardStep(HeadSequence s, int t, float[] states, int prev, float[] dO, float[] dS,
                                     float[] decayed, float[] w, float[] du, HeadGradients grads) {
        int kd = s.keyDim();
        int vd = s.valueDim();
        int size = kd * vd;
        int next = prev + size;
        int kRow = t * kd;
        int vRow = s.valueOffset(t);
        float beta = s.beta()[t];
        for (int i = 0; i < kd; i++) {
            float decay = (float) Math.exp(s.g()[kRow + i]);
            for (int j = 0; j < vd; j++) {
                decayed[i * vd + j] = states[prev + i * vd + j] * decay;
            }
        }
        // w = v − S̃ᵀk, u = βw.
        for (int j = 0; j < vd; j++) {
            w[j] = s.v()[vRow + j];
        }
        for (int i = 0; i < kd; i++) {
            float ki = s.k()[kRow + i];
            for (int j = 0; j < vd; j++) {
                w[j] -= ki * decayed[i * vd + j];
            }
        }
        // dS += q do; dq = S_t do.
        for (int i = 0; i < kd; i++) {
            float qi = s.q()[kRow + i];
            float dq = 0f;
            for (int j = 0; j < vd; j++) {
                float doj = dO[vRow + j];
                dS[i * vd + j] += qi * doj;
                dq += states[next + i * vd + j] * doj;
            }
            grads.dq()[kRow + i] = dq;
        }
        // du = dSᵀ k; dk = dS u.
        Arrays.fill(du, 0f);
        for (int i = 0; i < kd; i++) {
            float ki = s.k()[kRow + i];
            float dk = 0f;
            for (int j = 0; j < vd; j++) {
                du[j] += dS[i * vd + j] * ki;
                dk += dS[i * vd + j] * beta * w[j];
            }
            grads.dk()[kRow + i] = dk;
        }
        float dBeta = 0f;
        for (int j = 0; j < vd; j++) {
            dBeta += du[j] * w[j];
            grads.dv()[vRow + j] = beta * du[j];
        }
        grads.dBeta()[t] = dBeta;
        // dS̃ = dS − k (β du)ᵀ; dk −= S̃ (β du); dg = Σ_j S̃ ⊙ dS̃; dS_{t−1} = exp(g) ⊙ dS̃.
        for (int i = 0; i < kd; i++) {
            float ki = s.k()[kRow + i];
            float decay = (float) Math.exp(s.g()[kRow + i]);
            float dkCorrection = 0f;
            float dg = 0f;
            for (int j = 0; j < vd; j++) {
                float bdu = beta * du[j];
                dkCorrection += decayed[i * vd + j] * bdu;
                float dDecayed = dS[i * vd + j] - ki * bdu;
                dg += decayed[i * vd + j] * dDecayed;
                dS[i * vd + j] = decay * dDecayed;
            }
            grads.dk()[kRow + i] -= dkCorrection;
            grads.dg()[kRow + i] = dg;
        }
    }
}
