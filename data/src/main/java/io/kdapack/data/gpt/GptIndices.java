package io.kdapack.data.gpt;

import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.rng.NumpyRandomState;
import java.util.Arrays;

/**
 * The three arrays that fix Megatron's GPT sample order.
 *
 * @param documentIndex {@code [E·n]} dataset sequence ids, epoch copies shuffled (Megatron's
 *                      {@code document_index}, int32)
 * @param sampleIndex   {@code [S+1, 2]} flattened row-major: row k = (position in documentIndex, token offset in that
 *                      document) where sample k starts ({@code sample_index}, int32)
 * @param shuffleIndex  {@code [S]} the sample read at each dataset index ({@code shuffle_index}, uint32 in Megatron)
 */
public record GptIndices(int[] documentIndex, int[] sampleIndex, int[] shuffleIndex) {

    public GptIndices {
        if (sampleIndex.length < 2 || sampleIndex.length % 2 != 0) {
            throw new IllegalArgumentException("sampleIndex must hold S+1 >= 1 rows of 2, has " + sampleIndex.length
                    + " values");
        }
        if (shuffleIndex.length != sampleIndex.length / 2 - 1) {
            throw new IllegalArgumentException("shuffleIndex has " + shuffleIndex.length + " entries, expected S = "
                    + (sampleIndex.length / 2 - 1) + " (sampleIndex rows − 1)");
        }
    }

    /** S: the dataset length. */
    public int sampleCount() {
        return shuffleIndex.length;
    }

    /**
     * Builds the indices as Megatron's GPTDataset does: split → documents, epochs, document index, sample index
     * (the C++ {@code build_sample_idx} walk), shuffle index; one {@link NumpyRandomState} in that order.
     */
    public static GptIndices build(IndexedDataset dataset, GptIndexConfig config) {
        return build(dataset, config, EpochPlan.of(tokensPerEpoch(dataset, config), config));
    }

    /** As {@link #build(IndexedDataset, GptIndexConfig)} with the epoch plan already computed. */
    public static GptIndices build(IndexedDataset dataset, GptIndexConfig config, EpochPlan plan) {
        SplitRanges.DocumentRange documents = documents(dataset, config);
        NumpyRandomState random = new NumpyRandomState(config.randomSeed());
        int[] documentIndex = documentIndex(documents, plan.numEpochs(), plan.separateFinalEpoch(), random);
        int[] sampleIndex = sampleIndex(dataset, documentIndex, config, plan);
        int samples = sampleIndex.length / 2 - 1;
        int[] shuffleIndex = new int[samples];
        Arrays.setAll(shuffleIndex, k -> k);
        if (plan.separateFinalEpoch()) {
            int sans = (int) plan.samplesSansFinalEpoch();
            random.shuffle(shuffleIndex, 0, sans);
            random.shuffle(shuffleIndex, sans, samples);
        } else {
            random.shuffle(shuffleIndex);
        }
        return new GptIndices(documentIndex, sampleIndex, shuffleIndex);
    }

    /** The split part's documents; an absent part is an error naming the split. */
    public static SplitRanges.DocumentRange documents(IndexedDataset dataset, GptIndexConfig config) {
        SplitRanges.DocumentRange range = SplitRanges.range(config.split(), config.part(), dataset.sequenceCount());
        if (range == null) {
            throw new IllegalArgumentException("split '" + config.split() + "' has no " + config.part().label() + " part");
        }
        return range;
    }

    /** T: the tokens of the split part's documents. */
    public static long tokensPerEpoch(IndexedDataset dataset, GptIndexConfig config) {
        SplitRanges.DocumentRange range = documents(dataset, config);
        long tokens = 0;
        for (int d = range.begin(); d < range.end(); d++) {
            tokens += dataset.sequenceLength(d);
        }
        return tokens;
    }

    private static int[] documentIndex(SplitRanges.DocumentRange documents, int epochs, boolean separate,
                                       NumpyRandomState random) {
        int n = documents.size();
        int[] index = new int[Math.multiplyExact(epochs, n)];
        for (int e = 0; e < epochs; e++) {
            for (int i = 0; i < n; i++) {
                index[e * n + i] = documents.begin() + i;
            }
        }
        if (separate && epochs > 1) {
            random.shuffle(index, 0, (epochs - 1) * n);
            random.shuffle(index, (epochs - 1) * n, epochs * n);
        } else {
            random.shuffle(index);
        }
        return index;
    }

    /**
     * Megatron's {@code build_sample_idx}: walk the documents in documentIndex order, consuming L+x tokens per sample;
     * a sample ends x tokens before the point where the next one starts.
     */
    private static int[] sampleIndex(IndexedDataset dataset, int[] documentIndex, GptIndexConfig config, EpochPlan plan) {
        int x = config.extraTokens();
        int seqLength = config.seqLength();
        long streamTokens = plan.numEpochs() * plan.tokensPerEpoch();
        long samples = config.dropLastPartial()
                ? (streamTokens - x) / seqLength
                // Megatron computes this in single precision.
                : (long) Math.ceil((float) (streamTokens - x) / seqLength);
        if (samples + 1 > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException("dataset of " + samples + " samples is too large for int32 indices");
        }
        int[] rows = new int[2 * ((int) samples + 1)];
        int documentPosition = 0;
        long offset = 0;
        for (int k = 1; k <= samples; k++) {
            long remaining = seqLength + x;
            while (remaining != 0) {
                long documentLength = dataset.sequenceLength(documentIndex[documentPosition]) - offset;
                remaining -= documentLength;
                if (remaining <= 0) {
                    offset += remaining + documentLength - x;
                    remaining = 0;
                } else {
                    if (documentPosition == documentIndex.length - 1) {
                        if (k != samples) {
                            throw new IllegalStateException("documents ran out at sample " + k + " of " + samples
                                    + " (Megatron's helper asserts this)");
                        }
                        offset = dataset.sequenceLength(documentIndex[documentPosition]) - x;
                        break;
                    }
                    documentPosition++;
                    offset = 0;
                }
            }
            rows[2 * k] = documentPosition;
            rows[2 * k + 1] = (int) offset;
        }
        return rows;
    }
}
