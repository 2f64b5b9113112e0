package io.kdapack.data.gpt;

import io.kdapack.data.indexed.IndexedDataset;
import java.util.ArrayList;
import java.util.List;

/**
 * Megatron's {@code BlendedDataset.__getitem__}: blended sample {@code s} is sample {@code dataset_sample_index[s]} of
 * corpus {@code dataset_index[s]}, assembled by that corpus's {@link GptSampleAssembler}. Allocation free; not thread
 * safe (the assemblers have scratch buffers).
 */
public final class BlendedSampleAssembler implements GptSampleReader {
    private final BlendedIndices indices;
    private final List<GptSampleAssembler> corpora;
    private final int seqLength;
    private final int extraTokens;

    /**
     * @param datasets the corpora, in the order of {@code indices.corpora()}
     * @throws IllegalArgumentException when the counts differ or an index does not fit its corpus
     */
    public BlendedSampleAssembler(List<IndexedDataset> datasets, BlendedIndices indices, int seqLength,
                                  boolean addExtraToken, SampleOptions options) {
        if (datasets.size() != indices.corpora().size()) {
            throw new IllegalArgumentException(datasets.size() + " corpora for a blend of " + indices.corpora().size());
        }
        this.indices = indices;
        this.seqLength = seqLength;
        this.extraTokens = addExtraToken ? 1 : 0;
        List<GptSampleAssembler> assemblers = new ArrayList<>(datasets.size());
        for (int i = 0; i < datasets.size(); i++) {
            assemblers.add(new GptSampleAssembler(datasets.get(i), indices.corpora().get(i), seqLength, addExtraToken,
                    options));
        }
        this.corpora = List.copyOf(assemblers);
    }

    public BlendedIndices indices() {
        return indices;
    }

    @Override
    public int sampleCount() {
        return indices.sampleCount();
    }

    @Override
    public GptSample newSample() {
        return new GptSample(seqLength, extraTokens);
    }

    /** Assembles blended sample {@code sampleId}; {@link GptSample#sampleId()} is then the index within its corpus. */
    @Override
    public void assemble(int sampleId, GptSample out) {
        if (sampleId < 0 || sampleId >= indices.sampleCount()) {
            throw new IllegalArgumentException("blended sample id " + sampleId + " outside [0, " + indices.sampleCount()
                    + ")");
        }
        corpora.get(indices.datasetIndex()[sampleId]).assemble(indices.datasetSampleIndex()[sampleId], out);
    }
}
