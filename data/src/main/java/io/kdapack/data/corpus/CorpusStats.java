package io.kdapack.data.corpus;

import io.kdapack.data.indexed.IndexedDataset;
import java.util.Arrays;

/**
 * What a user needs to size fixed-shape segment limits: the distribution of document lengths and of documents per
 * sample. Samples are the windows of L input positions of Megatron's unshuffled stream (sample k covers tokens
 * {@code [k·L, k·L+L)}, with the extra label token, so {@code (T−1) div L} full samples); a document counts in every
 * window it overlaps. Documents are the dataset's sequences, as Megatron's GPT dataset counts them.
 *
 * @param documents          sequences in the dataset
 * @param tokens             tokens in the dataset
 * @param documentLength     tokens per document (EOD included)
 * @param seqLength          L
 * @param samples            full windows of L+1 tokens
 * @param documentsPerSample documents overlapping each window's L inputs
 */
public record CorpusStats(long documents, long tokens, Distribution documentLength, int seqLength, long samples,
                          Distribution documentsPerSample) {

    /**
     * Summary of a distribution; percentiles by nearest rank (the smallest value with at least p·count values at or
     * below it).
     */
    public record Distribution(long count, long min, double mean, long p50, long p90, long p99, long max) {
        static final Distribution EMPTY = new Distribution(0, 0, 0, 0, 0, 0, 0);

        /** From a histogram: {@code counts[v]} values equal to {@code v}. */
        static Distribution ofHistogram(long[] counts) {
            long n = 0;
            double sum = 0;
            long min = -1;
            long max = 0;
            for (int v = 0; v < counts.length; v++) {
                if (counts[v] > 0) {
                    n += counts[v];
                    sum += (double) v * counts[v];
                    min = min < 0 ? v : min;
                    max = v;
                }
            }
            if (n == 0) {
                return EMPTY;
            }
            return new Distribution(n, min, sum / n, rank(counts, n, 0.50), rank(counts, n, 0.90), rank(counts, n, 0.99), max);
        }

        /** From sorted values. */
        static Distribution ofSorted(int[] sorted) {
            if (sorted.length == 0) {
                return EMPTY;
            }
            double sum = 0;
            for (int v : sorted) {
                sum += v;
            }
            int n = sorted.length;
            return new Distribution(n, sorted[0], sum / n, sorted[rankIndex(n, 0.50)], sorted[rankIndex(n, 0.90)],
                    sorted[rankIndex(n, 0.99)], sorted[n - 1]);
        }

        private static long rank(long[] counts, long n, double p) {
            long target = rankIndex(n, p) + 1;
            long seen = 0;
            for (int v = 0; v < counts.length; v++) {
                seen += counts[v];
                if (seen >= target) {
                    return v;
                }
            }
            return counts.length - 1;
        }

        private static int rankIndex(long n, double p) {
            return (int) Math.max(0, (long) Math.ceil(p * n) - 1);
        }
    }

    /** Computes the statistics of {@code dataset} for samples of {@code seqLength} positions. */
    public static CorpusStats of(IndexedDataset dataset, int seqLength) {
        if (seqLength < 1) {
            throw new IllegalArgumentException("seqLength must be positive, got " + seqLength);
        }
        int sequences = dataset.sequenceCount();
        int[] lengths = new int[sequences];
        for (int s = 0; s < sequences; s++) {
            lengths[s] = dataset.sequenceLength(s);
        }
        long tokens = dataset.tokenCount();
        long samples = Math.max(0, (tokens - 1) / seqLength);
        long[] perSample = new long[seqLength + 1];
        int first = 0;          // first sequence that may overlap the current window
        long firstStart = 0;    // its first token in the stream
        for (long k = 0; k < samples; k++) {
            long windowStart = k * seqLength;
            long windowEnd = windowStart + seqLength;
            while (firstStart + lengths[first] <= windowStart) {
                firstStart += lengths[first];
                first++;
            }
            int overlapping = 0;
            long start = firstStart;
            for (int s = first; s < sequences && start < windowEnd; s++) {
                if (lengths[s] > 0) {
                    overlapping++;
                }
                start += lengths[s];
            }
            perSample[overlapping]++;
        }
        int[] sorted = lengths.clone();
        Arrays.sort(sorted);
        return new CorpusStats(sequences, tokens, Distribution.ofSorted(sorted), seqLength, samples,
                Distribution.ofHistogram(perSample));
    }
}
