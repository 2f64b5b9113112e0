package io.kdapack.data.gpt;

/**
 * What decides Megatron's GPT sample order (GPTDatasetConfig fields of the same meaning).
 *
 * @param seqLength                     L, tokens per sample ({@code sequence_length}), at least 2
 * @param randomSeed                    seed of numpy's {@code RandomState}, in {@code [0, 2^32)}
 * @param split                         Megatron's split string, e.g. {@code "969,30,1"}
 * @param part                          which part of the split this dataset is
 * @param numSamples                    samples requested ({@code num_samples}); {@code null} builds one epoch
 * @param addExtraToken                 {@code add_extra_token_to_sequence}: each sample reads L+1 tokens
 * @param dropLastPartialValidation     {@code drop_last_partial_validation_sequence} (train and test always drop)
 */
public record GptIndexConfig(int seqLength, long randomSeed, String split, DatasetSplit part, Long numSamples,
                             boolean addExtraToken, boolean dropLastPartialValidation) {

    public GptIndexConfig {
        if (seqLength < 2) {
            throw new IllegalArgumentException("seqLength must be at least 2 (Megatron asserts seq_length > 1), got "
                    + seqLength);
        }
        if (randomSeed < 0 || randomSeed > 0xFFFFFFFFL) {
            throw new IllegalArgumentException("randomSeed must be in [0, 2^32), got " + randomSeed);
        }
        if (numSamples != null && numSamples < 0) {
            throw new IllegalArgumentException("numSamples must be >= 0, got " + numSamples);
        }
        SplitRanges.weights(split);
    }

    /** x: 1 when each sample reads one extra token, else 0. */
    public int extraTokens() {
        return addExtraToken ? 1 : 0;
    }

    /** Whether the last partial sample is dropped: always for train and test. */
    public boolean dropLastPartial() {
        return part != DatasetSplit.VALID || dropLastPartialValidation;
    }
}
