package io.kdapack.training;

import io.kdapack.config.DataConfig;
import io.kdapack.data.gpt.BlendedIndices;
import io.kdapack.data.gpt.BlendedSampleAssembler;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.GptSampleReader;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The training samples of a Megatron {@code .bin/.idx} dataset in Megatron's GPTDataset order: the documents of the
 * configured split's train part, shuffled and cut into samples of {@code L+1} tokens with numpy's {@code RandomState}
 * seeded by {@code train.seed}, enough epochs for the requested number of samples. Sample {@code i} is what Megatron's
 * {@code GPTDataset[i]} returns, so a run that has consumed {@code c} samples continues at index {@code c}. For a
 * weighted blend ({@link TrainingCorpora#blended()}) sample {@code i} is Megatron's {@code BlendedDataset[i]}
 * ({@link BlendedIndices}).
 *
 * <p>Not thread safe (the assembler has one scratch buffer); each caller owns its instance.
 */
public final class MegatronSamples {
    private final TrainingCorpora corpora;
    private final GptSampleReader assembler;
    private final int seqLength;
    private final SampleOptions options;

    private MegatronSamples(TrainingCorpora corpora, GptSampleReader assembler, int seqLength, SampleOptions options) {
        this.corpora = corpora;
        this.assembler = assembler;
        this.seqLength = seqLength;
        this.options = options;
    }

    /**
     * Opens {@code prefix} and builds the sample order.
     *
     * @param numSamples samples the run will read (at least); more epochs are added as Megatron does
     */
    public static MegatronSamples open(Path prefix, DataConfig data, int seqLength, long seed, long numSamples)
            throws IOException {
        return open(prefix, data, DatasetSplit.TRAIN, seqLength, seed, numSamples);
    }

    /** As {@link #open(Path, DataConfig, int, long, long)} for another part of the split. */
    public static MegatronSamples open(Path prefix, DataConfig data, DatasetSplit part, int seqLength, long seed,
                                       long numSamples) throws IOException {
        return open(TrainingCorpora.single(prefix), data, part, seqLength, seed, numSamples);
    }

    /**
     * Opens the corpora and builds the sample order of {@code part}: one GPTDataset, or Megatron's blend of one per
     * corpus. Megatron's GPTDatasetConfig defaults hold: every sample reads {@code L+1} tokens and the valid part drops
     * its last partial sample ({@code drop_last_partial_validation_sequence}).
     *
     * @param numSamples samples the run will read from this part (at least)
     * @throws IllegalArgumentException when the part is absent from the split or a corpus has no documents in it (the
     *                                  message names the corpus)
     */
    public static MegatronSamples open(TrainingCorpora corpora, DataConfig data, DatasetSplit part, int seqLength,
                                       long seed, long numSamples) throws IOException {
        if (numSamples < 1) {
            throw new IllegalArgumentException("numSamples must be >= 1, got " + numSamples);
        }
        GptIndexConfig config = new GptIndexConfig(seqLength, seed, data.split(), part, numSamples, true, true);
        SampleOptions options = new SampleOptions(data.eodId(), data.padId(), data.eodMaskLoss(),
                data.resetPositionIds(), data.resetAttentionMask(), false);
        List<IndexedDataset> datasets = new ArrayList<>();
        for (Path prefix : corpora.prefixes()) {
            datasets.add(IndexedDataset.open(prefix));
        }
        GptSampleReader reader;
        if (corpora.blended()) {
            List<String> names = corpora.prefixes().stream().map(Path::toString).toList();
            BlendedIndices indices = BlendedIndices.build(datasets, names, corpora.weights(), config);
            reader = new BlendedSampleAssembler(datasets, indices, seqLength, true, options);
        } else {
            GptIndices indices = GptIndices.build(datasets.get(0), config);
            reader = new GptSampleAssembler(datasets.get(0), indices, seqLength, true, options);
        }
        if (reader.sampleCount() < numSamples) {
            throw new IllegalStateException("dataset " + corpora + " gives " + reader.sampleCount() + " "
                    + part.label() + " samples, " + numSamples + " requested");
        }
        return new MegatronSamples(corpora, reader, seqLength, options);
    }

    /** The corpora read. */
    public TrainingCorpora corpora() {
        return corpora;
    }

    /** L. */
    public int seqLength() {
        return seqLength;
    }

    /** How raw samples are split into tokens, labels, masks, positions and segments. */
    public SampleOptions options() {
        return options;
    }

    /** Samples available (at least the number requested). */
    public int sampleCount() {
        return assembler.sampleCount();
    }

    /** Fresh buffers for {@link #read}. */
    public GptSample newSample() {
        return assembler.newSample();
    }

    /** Assembles dataset index {@code index} into {@code out}. */
    public void read(long index, GptSample out) {
        if (index < 0 || index >= assembler.sampleCount()) {
            throw new IllegalArgumentException("sample index " + index + " outside [0, " + assembler.sampleCount()
                    + ") of " + corpora);
        }
        assembler.assemble((int) index, out);
    }
}
