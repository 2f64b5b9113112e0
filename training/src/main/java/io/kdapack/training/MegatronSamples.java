package io.kdapack.training;

import io.kdapack.config.DataConfig;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The training samples of a Megatron {@code .bin/.idx} dataset in Megatron's GPTDataset order: the documents of the
 * configured split's train part, shuffled and cut into samples of {@code L+1} tokens with numpy's {@code RandomState}
 * seeded by {@code train.seed}, enough epochs for the requested number of samples. Sample {@code i} is what Megatron's
 * {@code GPTDataset[i]} returns, so a run that has consumed {@code c} samples continues at index {@code c}.
 *
 * <p>Not thread safe (the assembler has one scratch buffer); each caller owns its instance.
 */
public final class MegatronSamples {
    private final Path prefix;
    private final GptSampleAssembler assembler;
    private final int seqLength;
    private final SampleOptions options;

    private MegatronSamples(Path prefix, GptSampleAssembler assembler, int seqLength, SampleOptions options) {
        this.prefix = prefix;
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
        if (numSamples < 1) {
            throw new IllegalArgumentException("numSamples must be >= 1, got " + numSamples);
        }
        IndexedDataset dataset = IndexedDataset.open(prefix);
        GptIndexConfig config = new GptIndexConfig(seqLength, seed, data.split(), part, numSamples, true, false);
        GptIndices indices = GptIndices.build(dataset, config);
        if (indices.sampleCount() < numSamples) {
            throw new IllegalStateException("dataset " + prefix + " gives " + indices.sampleCount() + " samples, "
                    + numSamples + " requested");
        }
        SampleOptions options = new SampleOptions(data.eodId(), data.padId(), data.eodMaskLoss(),
                data.resetPositionIds(), data.resetAttentionMask(), false);
        return new MegatronSamples(prefix, new GptSampleAssembler(dataset, indices, seqLength, true, options), seqLength,
                options);
    }

    public Path prefix() {
        return prefix;
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
                    + ") of " + prefix);
        }
        assembler.assemble((int) index, out);
    }
}
