package io.kdapack.core.kda;

import io.kdapack.core.linalg.VectorWidth;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Inputs of the KDA op over a flattened token axis of {@code T} tokens (packed layout, or {@code [B,T]}
 * flattened to {@code B·T}). Letters as in architecture §2: {@code H} q/k heads, {@code HV} value heads
 * ({@code HV % H == 0}), {@code K} key dim, {@code V} value dim, {@code N} sequences. All arrays are
 * row-major float32 and are not copied: callers must not change them while the op runs.
 *
 * @param segments where the sequences are; tokens covered by no segment are padding
 * @param heads    H
 * @param valueHeads HV
 * @param keyDim   K
 * @param valueDim V
 * @param q        {@code [T,H,K]}
 * @param k        {@code [T,H,K]}
 * @param v        {@code [T,HV,V]}
 * @param g        {@code [T,HV,K]} log-space decay, or the raw gate input when the gate is in the op
 * @param beta     {@code [T,HV]} beta in (0,1), or its logit with {@code betaSigmoid}
 * @param aLog     {@code [HV]} or null; only with a gate in the op
 * @param dtBias   {@code [HV·K]} (index {@code hv·K + i}) or null; required with a gate in the op
 * @param h0       {@code [N,HV,K,V]} initial states, or null for zero states
 */
public record KdaInputs(Segments segments, int heads, int valueHeads, int keyDim, int valueDim,
                        float[] q, float[] k, float[] v, float[] g, float[] beta,
                        float[] aLog, float[] dtBias, float[] h0) {

    /** Total number of token positions {@code T} (padding included). */
    public int tokens() {
        return segments.tokens();
    }

    /** Number of sequences {@code N}. */
    public int sequences() {
        return segments.count();
    }

    /**
     * Checks every shape and the presence of the optional inputs against {@code options}; the one place all
     * backends validate their inputs. Throws {@link IllegalArgumentException} naming the argument and the value.
     */
    public void validate(KdaOptions options) {
        if (options == null) {
            throw new IllegalArgumentException("options must not be null");
        }
        if (segments == null) {
            throw new IllegalArgumentException("segments must not be null");
        }
        requirePositive("heads (H)", heads);
        requirePositive("valueHeads (HV)", valueHeads);
        requirePositive("keyDim (K)", keyDim);
        requirePositive("valueDim (V)", valueDim);
        if (valueHeads % heads != 0) {
            throw new IllegalArgumentException("valueHeads (HV) = " + valueHeads + " must be a multiple of heads (H) = "
                    + heads);
        }
        long t = tokens();
        requireLength("q", q, t * heads * keyDim, "[T,H,K]");
        requireLength("k", k, t * heads * keyDim, "[T,H,K]");
        requireLength("v", v, t * valueHeads * valueDim, "[T,HV,V]");
        requireLength("g", g, t * valueHeads * keyDim, "[T,HV,K]");
        requireLength("beta", beta, t * valueHeads, "[T,HV]");
        boolean gateInOp = options.gate() != KdaOptions.Gate.NONE;
        if (!gateInOp) {
            requireLogDecay();
        }
        if (gateInOp) {
            requireLength("dtBias", dtBias, (long) valueHeads * keyDim, "[HV*K]");
        } else if (dtBias != null) {
            throw new IllegalArgumentException("dtBias must be null without a gate in the op (gate = NONE), got "
                    + dtBias.length + " values");
        }
        if (options.gate() == KdaOptions.Gate.SOFTPLUS) {
            requireLength("aLog", aLog, valueHeads, "[HV]");
        } else if (aLog != null) {
            if (options.gate() == KdaOptions.Gate.NONE) {
                throw new IllegalArgumentException("aLog must be null without a gate in the op (gate = NONE), got "
                        + aLog.length + " values");
            }
            requireLength("aLog", aLog, valueHeads, "[HV]");
        }
        if (h0 != null) {
            requireLength("h0", h0, stateSize(), "[N,HV,K,V]");
        }
    }

    /** Checks the upstream gradients of {@link KdaBackend#backward}: {@code dO [T,HV,V]}, {@code dHt [N,HV,K,V]} or null. */
    public void validateUpstream(float[] dO, float[] dHt) {
        requireLength("dO", dO, (long) tokens() * valueHeads * valueDim, "[T,HV,V]");
        if (dHt != null) {
            requireLength("dHt", dHt, stateSize(), "[N,HV,K,V]");
        }
    }

    /** Number of floats of all states {@code [N,HV,K,V]}. */
    public long stateSize() {
        return (long) sequences() * valueHeads * keyDim * valueDim;
    }

    /**
     * Without a gate in the op, {@code g} is the log-space decay itself: every entry of a segment token must be
     * {@code ≤ 0} (the chunked form's exponentials and its skipping of fully decayed pairs rely on it; padding
     * tokens are never read).
     */
    private void requireLogDecay() {
        int row = valueHeads * keyDim;
        for (int n = 0; n < segments.count(); n++) {
            int from = segments.start(n) * row;
            int to = segments.end(n) * row;
            int i = from;
            for (int bound = from + VectorWidth.SPECIES.loopBound(to - from); i < bound; i += VectorWidth.LANES) {
                if (!FloatVector.fromArray(VectorWidth.SPECIES, g, i).compare(VectorOperators.LE, 0f).allTrue()) {
                    break; // the element loop below finds which
                }
            }
            for (; i < to; i++) {
                if (!(g[i] <= 0f)) {
                    int token = i / row;
                    throw new IllegalArgumentException("g[" + i + "] = " + g[i] + " (token " + token + ", value head "
                            + i % row / keyDim + ", key element " + i % keyDim + "): without a gate in the op "
                            + "(gate = NONE) g is the log-space decay and must be <= 0");
                }
            }
        }
    }

    private void requireLength(String name, float[] array, long expected, String shape) {
        if (array == null) {
            throw new IllegalArgumentException(name + " must not be null (expected " + shape + " = " + expected
                    + " values)");
        }
        if (array.length != expected) {
            throw new IllegalArgumentException(name + " has " + array.length + " values, expected " + shape + " = "
                    + expected + " (T=" + tokens() + ", N=" + sequences() + ", H=" + heads + ", HV=" + valueHeads
                    + ", K=" + keyDim + ", V=" + valueDim + ")");
        }
    }

    private static void requirePositive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, got " + value);
        }
    }
}
