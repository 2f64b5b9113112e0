package io.kdapack.inference;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks the next token from one row of logits for one request: greedy at temperature 0, else
 * {@code softmax(logits / temperature)} restricted to the top-k, then to the top-p nucleus, sampled with the
 * request's own random stream. Probabilities are computed in float64 over candidates sorted by logit (ties: the
 * lower id first), so the draw depends only on the logits, the parameters and the seed.
 */
public final class Sampler {
    private final SamplingParams params;
    private final SplittableRandom random;

    public Sampler(SamplingParams params) {
        this.params = params;
        this.random = new SplittableRandom(params.seed());
    }

    /** The next token for {@code logits[offset … offset+vocab)}. */
    public int next(float[] logits, int offset, int vocab) {
        if (params.temperature() == 0) {
            return argMax(logits, offset, vocab);
        }
        Integer[] order = new Integer[vocab];
        for (int i = 0; i < vocab; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> {
            int byLogit = Float.compare(logits[offset + b], logits[offset + a]);
            return byLogit != 0 ? byLogit : Integer.compare(a, b);
        });
        int kept = params.topK() == 0 ? vocab : Math.min(params.topK(), vocab);
        double max = logits[offset + order[0]];
        double[] weights = new double[kept];
        double total = 0;
        for (int i = 0; i < kept; i++) {
            weights[i] = Math.exp((logits[offset + order[i]] - max) / params.temperature());
            total += weights[i];
        }
        if (params.topP() < 1) {
            double cumulative = 0;
            int nucleus = 0;
            while (nucleus < kept) {
                cumulative += weights[nucleus] / total;
                nucleus++;
                if (cumulative >= params.topP()) {
                    break;
                }
            }
            kept = nucleus;
            total = 0;
            for (int i = 0; i < kept; i++) {
                total += weights[i];
            }
        }
        double u = random.nextDouble() * total;
        double cumulative = 0;
        for (int i = 0; i < kept; i++) {
            cumulative += weights[i];
            if (u < cumulative) {
                return order[i];
            }
        }
        return order[kept - 1];
    }

    /** The arg-max of the row, the lowest id on ties. */
    public static int argMax(float[] logits, int offset, int vocab) {
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logits[offset + i] > logits[offset + best]) {
                best = i;
            }
        }
        return best;
    }

    /**
     * {@code ln softmax(logits)[id]} at temperature 1 (the model's own distribution, whatever the sampling
     * temperature), in float64.
     */
    public static double logProbability(float[] logits, int offset, int vocab, int id) {
        return LogSoftmax.of(logits, offset, vocab).at(logits[offset + id]);
    }

    /**
     * The {@code count} most likely ids of the row (by logit, the lower id first on ties), most likely first, each
     * with its {@link #logProbability}.
     *
     * @return {@code count} ids and their log-probabilities; fewer when the vocabulary is smaller
     */
    public static Alternatives top(float[] logits, int offset, int vocab, int count) {
        return top(logits, offset, vocab, count, LogSoftmax.of(logits, offset, vocab));
    }

    /** {@link #top} with the row's {@link LogSoftmax} already computed. */
    static Alternatives top(float[] logits, int offset, int vocab, int count, LogSoftmax logSoftmax) {
        int n = Math.min(count, vocab);
        int[] ids = new int[n];
        int found = 0;
        // n is at most SamplingParams.MAX_TOP_LOGPROBS: an insertion into a short sorted list beats sorting the row.
        for (int i = 0; i < vocab; i++) {
            float logit = logits[offset + i];
            int at = found;
            while (at > 0 && logits[offset + ids[at - 1]] < logit) {
                at--;
            }
            if (at < n) {
                System.arraycopy(ids, at, ids, at + 1, Math.min(found, n - 1) - at);
                ids[at] = i;
                found = Math.min(found + 1, n);
            }
        }
        double[] logprobs = new double[n];
        for (int i = 0; i < n; i++) {
            logprobs[i] = logSoftmax.at(logits[offset + ids[i]]);
        }
        return new Alternatives(ids, logprobs);
    }

    /** Ids, most likely first, and {@code ln p} of each at temperature 1. */
    public record Alternatives(int[] ids, double[] logprobs) {
    }

    /**
     * A row's log-softmax at temperature 1, in float64: its max and {@code ln Σ exp(logit − max)}, kept apart so that no
     * rounding joins them; {@link #at} gives {@code ln p} of a logit. Computed once per row for the chosen token and its
     * alternatives.
     */
    record LogSoftmax(double max, double shiftedLogSum) {
        static LogSoftmax of(float[] logits, int offset, int vocab) {
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < vocab; i++) {
                max = Math.max(max, logits[offset + i]);
            }
            double sum = 0;
            for (int i = 0; i < vocab; i++) {
                sum += Math.exp(logits[offset + i] - max);
            }
            return new LogSoftmax(max, Math.log(sum));
        }

        double at(float logit) {
            return logit - max - shiftedLogSum;
        }
    }
}
