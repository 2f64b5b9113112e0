package io.kdapack.data.gpt;

import io.kdapack.data.indexed.IndexedDataset;
import java.util.ArrayList;
import java.util.List;

/**
 * Megatron's weighted blend of GPT datasets ({@code BlendedMegatronDatasetBuilder} with {@code blend = (prefixes,
 * weights)}, then {@code BlendedDataset}) for one part of the split:
 * <ol>
 *   <li>the weights are normalised to sum to 1 ({@code w / numpy.sum(w)}, float64);</li>
 *   <li>for a requested size {@code N}, corpus {@code i}'s GPTDataset is built (its own split, its own Megatron order
 *       with the same seed) for {@code ceil(ceil(N·w_i)·(1 + surplus))} samples, {@code surplus =}
 *       {@value #MID_LEVEL_DATASET_SURPLUS} ({@code mid_level_dataset_surplus});</li>
 *   <li>the blend holds {@code S = Σ_i ceil(N·w_i)} samples (a few more than {@code N} when the products are not
 *       whole);</li>
 *   <li>{@code BlendedDataset} normalises the weights once more and Megatron's {@code build_blending_indices}
 *       (helpers.cpp) gives blended sample {@code s} to the corpus with the largest {@code w_i·max(s, 1) − taken_i}
 *       (double precision, the first corpus winning a tie), which hands over its next sample.</li>
 * </ol>
 *
 * @param corpora            {@code [C]} each corpus's GPT indices for this part
 * @param datasetIndex       {@code [S]} corpus of each blended sample ({@code dataset_index})
 * @param datasetSampleIndex {@code [S]} that sample's index within its corpus's GPTDataset ({@code dataset_sample_index})
 */
public record BlendedIndices(List<GptIndices> corpora, int[] datasetIndex, int[] datasetSampleIndex) {
    /** Megatron's default {@code mid_level_dataset_surplus}. */
    public static final double MID_LEVEL_DATASET_SURPLUS = 0.005;

    public BlendedIndices {
        corpora = List.copyOf(corpora);
        if (datasetIndex.length != datasetSampleIndex.length) {
            throw new IllegalArgumentException("datasetIndex has " + datasetIndex.length + " entries, datasetSampleIndex "
                    + datasetSampleIndex.length);
        }
    }

    /** S: the blend's length. */
    public int sampleCount() {
        return datasetIndex.length;
    }

    /**
     * Builds the blend of {@code datasets} with {@code weights} for {@code config}'s part and seed;
     * {@code config.numSamples()} is the requested size {@code N} (required).
     *
     * @param names how each corpus is named in errors (its prefix)
     * @throws IllegalArgumentException when a weight is not a positive finite number, the counts differ, N is absent,
     *                                  or a corpus has no documents in the part (the message names the corpus)
     */
    public static BlendedIndices build(List<IndexedDataset> datasets, List<String> names, double[] weights,
                                       GptIndexConfig config) {
        if (datasets.isEmpty() || datasets.size() != weights.length || names.size() != weights.length) {
            throw new IllegalArgumentException("a blend needs one weight and one name per corpus and at least one corpus; "
                    + "got " + datasets.size() + " corpora, " + weights.length + " weights, " + names.size() + " names");
        }
        if (datasets.size() > Short.MAX_VALUE) {
            throw new IllegalArgumentException("a blend holds at most " + Short.MAX_VALUE
                    + " corpora (Megatron's dataset_index is int16), got " + datasets.size());
        }
        if (config.numSamples() == null) {
            throw new IllegalArgumentException("a blend needs the number of samples of the " + config.part().label()
                    + " part (numSamples)");
        }
        double[] once = normalize(weights);
        long[] target = targetSizes(once, config.numSamples());
        List<GptIndices> corpora = new ArrayList<>(datasets.size());
        for (int i = 0; i < datasets.size(); i++) {
            long corpusSamples = (long) Math.ceil(target[i] * (1 + MID_LEVEL_DATASET_SURPLUS));
            GptIndexConfig corpusConfig = new GptIndexConfig(config.seqLength(), config.randomSeed(), config.split(),
                    config.part(), corpusSamples, config.addExtraToken(), config.dropLastPartialValidation());
            try {
                corpora.add(GptIndices.build(datasets.get(i), corpusConfig));
            } catch (IllegalArgumentException | IllegalStateException e) {
                throw new IllegalArgumentException("blend corpus " + i + " (" + names.get(i) + "): " + e.getMessage(), e);
            }
        }
        long size = 0;
        for (long t : target) {
            size += t;
        }
        if (size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a blend of " + size + " samples is too large for int32 indices");
        }
        int[] datasetIndex = new int[(int) size];
        int[] datasetSampleIndex = new int[(int) size];
        blendingIndices(normalize(once), datasetIndex, datasetSampleIndex);
        for (int s = 0; s < size; s++) {
            int corpus = datasetIndex[s];
            if (datasetSampleIndex[s] >= corpora.get(corpus).sampleCount()) {
                throw new IllegalStateException("blended sample " + s + " reads sample " + datasetSampleIndex[s]
                        + " of corpus " + corpus + " (" + names.get(corpus) + "), which holds "
                        + corpora.get(corpus).sampleCount());
            }
        }
        return new BlendedIndices(corpora, datasetIndex, datasetSampleIndex);
    }

    /**
     * Megatron's {@code normalize}: {@code w / numpy.sum(w)} in float64. numpy sums fewer than 8 values left to right
     * from 0 (its pairwise sum only splits longer arrays), so the sum is a plain loop for such blends.
     *
     * @throws IllegalArgumentException when a weight is not a positive finite number
     */
    public static double[] normalize(double[] weights) {
        for (int i = 0; i < weights.length; i++) {
            if (!(weights[i] > 0) || !Double.isFinite(weights[i])) {
                throw new IllegalArgumentException("blend weight " + i + " = " + weights[i]
                        + ": every weight must be a positive finite number");
            }
        }
        double sum = numpySum(weights);
        double[] out = new double[weights.length];
        for (int i = 0; i < weights.length; i++) {
            out[i] = weights[i] / sum;
        }
        return out;
    }

    /** {@code ceil(N·w_i)} for each once-normalised weight: the samples each corpus contributes to the blend. */
    public static long[] targetSizes(double[] normalizedWeights, long numSamples) {
        long[] out = new long[normalizedWeights.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = (long) Math.ceil(numSamples * normalizedWeights[i]);
        }
        return out;
    }

    /** Megatron's {@code build_blending_indices} (helpers.cpp), in the same double arithmetic. */
    static void blendingIndices(double[] weights, int[] datasetIndex, int[] datasetSampleIndex) {
        long[] taken = new long[weights.length];
        for (int s = 0; s < datasetIndex.length; s++) {
            double at = Math.max((double) s, 1.0);
            int best = 0;
            double bestError = weights[0] * at - (double) taken[0];
            for (int i = 1; i < weights.length; i++) {
                double error = weights[i] * at - (double) taken[i];
                if (error > bestError) {
                    bestError = error;
                    best = i;
                }
            }
            datasetIndex[s] = best;
            datasetSampleIndex[s] = (int) taken[best];
            taken[best]++;
        }
    }

    /**
     * numpy's float64 {@code sum} (pairwise_sum): left to right from 0 below 8 values; up to 128 values, eight
     * running partial sums combined as {@code ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))} and then the remainder; longer
     * arrays split in two halves (the first a multiple of 8) summed the same way.
     */
    static double numpySum(double[] values) {
        return 0.0 + pairwiseSum(values, 0, values.length);
    }

    private static double pairwiseSum(double[] a, int from, int n) {
        if (n < 8) {
            double res = 0.0;
            for (int i = 0; i < n; i++) {
                res += a[from + i];
            }
            return res;
        }
        if (n <= 128) {
            double[] r = new double[8];
            for (int j = 0; j < 8; j++) {
                r[j] = a[from + j];
            }
            int i = 8;
            for (; i < n - n % 8; i += 8) {
                for (int j = 0; j < 8; j++) {
                    r[j] += a[from + i + j];
                }
            }
            double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) {
                res += a[from + i];
            }
            return res;
        }
        int half = n / 2;
        half -= half % 8;
        return pairwiseSum(a, from, half) + pairwiseSum(a, from + half, n - half);
    }
}
