package io.kdapack.core.loss;

import io.kdapack.core.linalg.ExpKernels;
import io.kdapack.core.linalg.VectorWidth;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Per-token cross-entropy of logits {@code [T,V]} against integer labels {@code [T]}, as Megatron's
 * {@code vocab_parallel_cross_entropy} defines it: {@code ce_t = log Σ_v exp(z_tv − max_v z_tv) − (z_t,label − max_v z_tv)},
 * no label smoothing. The logits are fp32; the shifted exponentials are summed and the loss formed in double,
 * so the result is the float64 cross-entropy of the fp32 logits (Megatron's fp32 arithmetic differs from it by
 * about 4e-8 relative).
 *
 * <p>Rows are independent: callers that want parallelism split {@code T} into ranges and call the range
 * overloads once per range; every token's result is the same whatever the split.
 *
 * <p>Both passes are vectorised and bitwise the same for every vector width (docs/kda.md, "Determinism across vector
 * widths"). The forward's exponentials are a double polynomial ({@link #exp(double)}, within 2 ulp of
 * {@code Math.exp}), summed through {@value #PARTIALS} double partial sums in a fixed layout (element {@code 16b + j}
 * of the whole blocks of 16 into partial {@code j}, combined in a fixed tree, then the tail in order), so the loss
 * stays the float64 cross-entropy to about 1e-16 relative. The backward's softmax is fp32:
 * {@code exp(z − max)} by {@link ExpKernels#exp(FloatVector)} times the row's {@code weight·exp(max − lse)}, about
 * 3 ulp of float (the target's entry in double as before).
 */
public final class CrossEntropy {
    private static final VectorSpecies<Float> FLOATS = VectorWidth.SPECIES;
    private static final VectorSpecies<Double> DOUBLES = VectorWidth.DOUBLES;
    private static final int DOUBLE_LANES = DOUBLES.length();
    private static final int PARTIALS = 16;
    /** Below it {@link #exp(double)} returns {@code exp(−708)} (≈ 3e-308, still normal) rather than a smaller value. */
    private static final double EXP_LO = -708;
    private static final double LOG2E = 1.4426950408889634;
    /** 1.5·2⁵²: adding it rounds a double of magnitude below 2⁵¹ to an integer, held in the low mantissa bits. */
    private static final double ROUNDER = 6755399441055744.0;
    private static final long ROUNDER_BITS = Double.doubleToRawLongBits(ROUNDER);
    private static final double LN2_HI = 6.93147180369123816490e-01;
    private static final double LN2_LO = 1.90821492927058770002e-10;
    /** 1/k! for k = 13 down to 2: the Taylor polynomial of exp on |r| ≤ ln2/2 (truncation below 1e-17 relative). */
    private static final double[] TAYLOR = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
        1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5};

    private CrossEntropy() {
    }

    /**
     * The forward pass of one block of tokens.
     *
     * @param loss      {@code [T]} per-token cross-entropy
     * @param logSumExp {@code [T]} {@code log Σ_v exp(z_tv)}, kept for {@link #backward}
     */
    public record Result(double[] loss, double[] logSumExp) {
    }

    /**
     * Per-token cross-entropy.
     *
     * @param logits {@code [T,V]} row-major
     * @param labels {@code [T]} target ids, each in {@code [0, V)}
     * @param vocab  {@code V}
     */
    public static Result forward(float[] logits, int[] labels, int vocab) {
        int tokens = checkShapes(logits, labels, vocab);
        Result result = new Result(new double[tokens], new double[tokens]);
        forward(logits, labels, vocab, 0, tokens, result);
        return result;
    }

    /**
     * Per-token cross-entropy of tokens {@code [from, to)} only, written into {@code out} at the same indices.
     * Disjoint ranges may run on different threads; the results do not depend on the split.
     */
    public static void forward(float[] logits, int[] labels, int vocab, int from, int to, Result out) {
        checkRange(checkShapes(logits, labels, vocab), from, to);
        requireLength("loss", out.loss().length, labels.length);
        requireLength("logSumExp", out.logSumExp().length, labels.length);
        double[] partials = new double[PARTIALS];
        for (int t = from; t < to; t++) {
            rowLoss(logits, labels, vocab, t, partials, out);
        }
    }

    /**
     * Gradient of {@code Σ_t weight_t · ce_t} with respect to the logits:
     * {@code grad[t,v] = weight_t · (softmax(z_t)_v − [v = label_t])}. Rows with weight 0 are set to 0.
     *
     * @param logits       {@code [T,V]} the logits given to {@link #forward}
     * @param labels       {@code [T]}
     * @param vocab        {@code V}
     * @param logSumExp    {@code [T]} from {@link Result#logSumExp()}
     * @param tokenWeights {@code [T]} the loss weight of each token (mask × reduction scale, see {@link LossScaling})
     * @param gradLogits   {@code [T,V]} output, overwritten; may be {@code logits} itself (the gradient then replaces
     *                     the logits in place, each row read before it is written)
     */
    public static void backward(float[] logits, int[] labels, int vocab, double[] logSumExp, double[] tokenWeights,
                                float[] gradLogits) {
        backward(logits, labels, vocab, logSumExp, tokenWeights, gradLogits, 0, labels.length);
    }

    /** {@link #backward(float[], int[], int, double[], double[], float[])} for the rows of tokens {@code [from, to)} only. */
    public static void backward(float[] logits, int[] labels, int vocab, double[] logSumExp, double[] tokenWeights,
                                float[] gradLogits, int from, int to) {
        int tokens = checkShapes(logits, labels, vocab);
        checkRange(tokens, from, to);
        requireLength("logSumExp", logSumExp.length, tokens);
        requireLength("tokenWeights", tokenWeights.length, tokens);
        requireLength("gradLogits", gradLogits.length, logits.length);
        for (int t = from; t < to; t++) {
            int row = t * vocab;
            gradientRow(logits, row, vocab, row + labels[t], max(logits, row, vocab), logSumExp[t], tokenWeights[t],
                    gradLogits);
        }
    }

    /**
     * {@link #forward(float[], int[], int, int, int, Result)} and {@link #backward(float[], int[], int, double[],
     * double[], float[], int, int)} of tokens {@code [from, to)} at once: each row's gradient is written right after
     * its loss, while the row is still in cache, and its maximum is found once. The same bits as the two calls.
     */
    public static void forwardBackward(float[] logits, int[] labels, int vocab, double[] tokenWeights, Result out,
                                       float[] gradLogits, int from, int to) {
        int tokens = checkShapes(logits, labels, vocab);
        checkRange(tokens, from, to);
        requireLength("loss", out.loss().length, tokens);
        requireLength("logSumExp", out.logSumExp().length, tokens);
        requireLength("tokenWeights", tokenWeights.length, tokens);
        requireLength("gradLogits", gradLogits.length, logits.length);
        double[] partials = new double[PARTIALS];
        for (int t = from; t < to; t++) {
            int row = t * vocab;
            float max = rowLoss(logits, labels, vocab, t, partials, out);
            gradientRow(logits, row, vocab, row + labels[t], max, out.logSumExp()[t], tokenWeights[t], gradLogits);
        }
    }

    /** Token t's loss and log-sum-exp into {@code out}; returns the row's maximum. */
    private static float rowLoss(float[] logits, int[] labels, int vocab, int t, double[] partials, Result out) {
        int row = t * vocab;
        float max = max(logits, row, vocab);
        if (!Float.isFinite(max)) {
            throw new IllegalArgumentException("logits: row " + t + " has a non-finite maximum " + max);
        }
        double sum = sumExp(logits, row, vocab, max, partials);
        double lse = Math.log(sum) + max;
        out.logSumExp()[t] = lse;
        out.loss()[t] = lse - logits[row + labels[t]];
        return max;
    }

    /**
     * One row's gradient {@code weight · (softmax − onehot(target))} from its maximum and log-sum-exp, into the same
     * row of {@code gradLogits} (which may be the logits themselves).
     */
    private static void gradientRow(float[] logits, int row, int vocab, int target, float max, double lse,
                                    double weight, float[] gradLogits) {
        if (weight == 0) {
            java.util.Arrays.fill(gradLogits, row, row + vocab, 0f);
            return;
        }
        float targetLogit = logits[target]; // read before the row is overwritten when gradLogits is logits
        float factor = (float) (weight * Math.exp(max - lse));
        int v = 0;
        for (; v <= vocab - FLOATS.length(); v += FLOATS.length()) {
            ExpKernels.exp(FloatVector.fromArray(FLOATS, logits, row + v).sub(max)).mul(factor)
                    .intoArray(gradLogits, row + v);
        }
        for (; v < vocab; v++) {
            gradLogits[row + v] = ExpKernels.exp(logits[row + v] - max) * factor;
        }
        gradLogits[target] = (float) (weight * (Math.exp(targetLogit - lse) - 1.0));
    }

    /** {@code max_v logits[row + v]} (exact in any order). */
    private static float max(float[] logits, int row, int vocab) {
        FloatVector m = FloatVector.broadcast(FLOATS, Float.NEGATIVE_INFINITY);
        int v = 0;
        for (; v <= vocab - FLOATS.length(); v += FLOATS.length()) {
            m = m.max(FloatVector.fromArray(FLOATS, logits, row + v));
        }
        float max = m.reduceLanes(VectorOperators.MAX);
        for (; v < vocab; v++) {
            max = Math.max(max, logits[row + v]);
        }
        return max;
    }

    /**
     * {@code Σ_v exp((double) logits[row + v] − max)} in the fixed order of the class comment; {@code partials} is
     * scratch of {@value #PARTIALS}.
     */
    private static double sumExp(float[] logits, int row, int vocab, float max, double[] partials) {
        int whole = vocab - vocab % PARTIALS;
        int accumulators = PARTIALS / DOUBLE_LANES;
        for (int a = 0; a < accumulators; a++) {
            DoubleVector acc = DoubleVector.zero(DOUBLES);
            for (int v = a * DOUBLE_LANES; v < whole; v += PARTIALS) {
                DoubleVector x = VectorWidth.toDoubles(logits, row + v);
                acc = acc.add(exp(x.sub(max)));
            }
            acc.intoArray(partials, a * DOUBLE_LANES);
        }
        for (int width = PARTIALS / 2; width >= 1; width /= 2) {
            for (int j = 0; j < width; j++) {
                partials[j] += partials[j + width];
            }
        }
        double tail = 0;
        for (int v = whole; v < vocab; v++) {
            tail += exp((double) logits[row + v] - max);
        }
        return partials[0] + tail;
    }

    /**
     * {@code exp(x)} for {@code x ≤ 0} (the shifted logits), within 2 ulp: {@code 2ⁿ · exp(r)} with
     * {@code n = round(x·log₂e)}, {@code r = x − n·ln2} in two parts, and {@code exp(r)} its Taylor polynomial of
     * degree 13 by Horner's rule in fused multiply-adds. The same operations as {@link #exp(DoubleVector)}.
     */
    static double exp(double x) {
        x = Math.max(x, EXP_LO);
        double t = Math.fma(x, LOG2E, ROUNDER);
        double n = t - ROUNDER;
        double r = Math.fma(n, -LN2_HI, x);
        r = Math.fma(n, -LN2_LO, r);
        double p = TAYLOR[0];
        for (int i = 1; i < TAYLOR.length; i++) {
            p = Math.fma(p, r, TAYLOR[i]);
        }
        p = Math.fma(p, r, 1.0);
        p = Math.fma(p, r, 1.0);
        double scale = Double.longBitsToDouble((Double.doubleToRawLongBits(t) - ROUNDER_BITS + 1023) << 52);
        return p * scale;
    }

    /** Lane-wise {@link #exp(double)}. */
    static DoubleVector exp(DoubleVector x) {
        x = x.max(EXP_LO);
        DoubleVector t = x.fma(LOG2E, ROUNDER);
        DoubleVector n = t.sub(ROUNDER);
        DoubleVector r = n.fma(DoubleVector.broadcast(DOUBLES, -LN2_HI), x);
        r = n.fma(DoubleVector.broadcast(DOUBLES, -LN2_LO), r);
        DoubleVector p = DoubleVector.broadcast(DOUBLES, TAYLOR[0]);
        for (int i = 1; i < TAYLOR.length; i++) {
            p = p.fma(r, DoubleVector.broadcast(DOUBLES, TAYLOR[i]));
        }
        DoubleVector one = DoubleVector.broadcast(DOUBLES, 1.0);
        p = p.fma(r, one);
        p = p.fma(r, one);
        LongVector bits = ((LongVector) t.reinterpretAsLongs()).sub(ROUNDER_BITS - 1023).lanewise(VectorOperators.LSHL, 52);
        return p.mul(bits.reinterpretAsDoubles());
    }

    private static int checkShapes(float[] logits, int[] labels, int vocab) {
        if (vocab <= 0) {
            throw new IllegalArgumentException("vocab must be > 0, got " + vocab);
        }
        if (logits.length != (long) labels.length * vocab) {
            throw new IllegalArgumentException("logits: " + logits.length + " values, expected T·V = " + labels.length
                    + "·" + vocab + " = " + (long) labels.length * vocab);
        }
        for (int t = 0; t < labels.length; t++) {
            if (labels[t] < 0 || labels[t] >= vocab) {
                throw new IllegalArgumentException("labels: label " + labels[t] + " at token " + t
                        + " is outside [0, " + vocab + ")");
            }
        }
        return labels.length;
    }

    private static void checkRange(int tokens, int from, int to) {
        if (from < 0 || to < from || to > tokens) {
            throw new IllegalArgumentException("token range [" + from + ", " + to + ") outside [0, " + tokens + ")");
        }
    }

    private static void requireLength(String name, int actual, int expected) {
        if (actual != expected) {
            throw new IllegalArgumentException(name + ": length " + actual + ", expected " + expected);
        }
    }
}
