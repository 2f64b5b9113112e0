package io.kdapack.data.gpt;

/**
 * A Megatron dataset of GPT samples addressed by dataset index: one corpus ({@link GptSampleAssembler}, Megatron's
 * {@code GPTDataset}) or a weighted blend of several ({@link BlendedSampleAssembler}, Megatron's {@code BlendedDataset}).
 */
public interface GptSampleReader {

    /** S: the dataset length. */
    int sampleCount();

    /** Fresh buffers sized for this dataset. */
    GptSample newSample();

    /** Assembles dataset index {@code sampleId} into {@code out}. */
    void assemble(int sampleId, GptSample out);
}
