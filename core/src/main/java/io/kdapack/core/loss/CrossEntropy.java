package io.kdapack.core.loss;

/**
 * Per-token cross-entropy of logits {@code [T,V]} against integer labels {@code [T]}, as Megatron's
 * {@code vocab_parallel_cross_entropy} defines it: {@code ce_t = log Σ_v exp(z_tv − max_v z_tv) − (z_t,label − max_v z_tv)},
 * no label smoothing. The logits are fp32; the shifted exponentials are summed and the loss formed in double,
 * so the result is the float64 cross-entropy of the fp32 logits (Megatron's fp32 arithmetic differs from it by
 * about 4e-8 relative).
 *
 * <p>Rows are independent: callers that want parallelism split {@code T} into ranges and call the range
 * overloads once per range; every token's result is the same whatever the split.
 */
public final class CrossEntropy {

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
        for (int t = from; t < to; t++) {
            int row = t * vocab;
            float max = Float.NEGATIVE_INFINITY;
            for (int v = 0; v < vocab; v++) {
                max = Math.max(max, logits[row + v]);
            }
            if (!Float.isFinite(max)) {
                throw new IllegalArgumentException("logits: row " + t + " has a non-finite maximum " + max);
            }
            double sum = 0;
            for (int v = 0; v < vocab; v++) {
                sum += Math.exp((double) logits[row + v] - max);
            }
            double lse = Math.log(sum) + max;
            out.logSumExp()[t] = lse;
            out.loss()[t] = lse - logits[row + labels[t]];
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
     * @param gradLogits   {@code [T,V]} output, overwritten
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
            double weight = tokenWeights[t];
            if (weight == 0) {
                java.util.Arrays.fill(gradLogits, row, row + vocab, 0f);
                continue;
            }
            double lse = logSumExp[t];
            for (int v = 0; v < vocab; v++) {
                gradLogits[row + v] = (float) (weight * Math.exp(logits[row + v] - lse));
            }
            int target = row + labels[t];
            gradLogits[target] = (float) (weight * (Math.exp(logits[target] - lse) - 1.0));
        }
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
