package io.kdapack.data.gpt;

import io.kdapack.data.indexed.IndexedDataset;
import java.util.Arrays;

/**
 * Megatron's {@code GPTDataset.__getitem__}: reads sample i through the shuffle and sample indices and splits it into
 * {@code tokens, labels, loss_mask, position_ids} and attention segments. Allocation free: every call overwrites a
 * caller-owned {@link GptSample}. Not thread safe (one scratch buffer); use one assembler per thread.
 *
 * <p>Masks and positions come from the inputs as read, before pad ids become 0: {@code eod_mask_loss} zeroes the loss
 * where the input is EOD, {@code reset_position_ids} restarts positions and {@code reset_attention_mask} starts a new
 * segment at the position after each input EOD. Then positions whose label is the pad id leave the loss, and pad ids
 * become 0 in tokens and labels.
 */
public final class GptSampleAssembler implements GptSampleReader {
    private final IndexedDataset dataset;
    private final GptIndices indices;
    private final int seqLength;
    private final int extraTokens;
    private final SampleOptions options;
    /** Tokens read from each document of the sample being assembled, in order. */
    private final int[] partLengths;
    private int partCount;

    /**
     * @param seqLength     L
     * @param addExtraToken whether samples read L+1 tokens ({@code add_extra_token_to_sequence})
     * @throws IllegalArgumentException when {@code indices} do not fit {@code dataset} (e.g. a cache of another corpus)
     */
    public GptSampleAssembler(IndexedDataset dataset, GptIndices indices, int seqLength, boolean addExtraToken,
                              SampleOptions options) {
        this.dataset = dataset;
        this.indices = indices;
        this.seqLength = seqLength;
        this.extraTokens = addExtraToken ? 1 : 0;
        this.options = options;
        this.partLengths = new int[seqLength + extraTokens + 1];
        checkIndices();
    }

    /** S: the dataset length. */
    @Override
    public int sampleCount() {
        return indices.sampleCount();
    }

    public GptIndices indices() {
        return indices;
    }

    /** Fresh buffers sized for this assembler. */
    @Override
    public GptSample newSample() {
        return new GptSample(seqLength, extraTokens);
    }

    /** Assembles dataset index {@code sampleId} into {@code out}. */
    @Override
    public void assemble(int sampleId, GptSample out) {
        if (sampleId < 0 || sampleId >= indices.sampleCount()) {
            throw new IllegalArgumentException("sample id " + sampleId + " outside [0, " + indices.sampleCount() + ")");
        }
        if (out.seqLength() != seqLength || out.rawText().length != seqLength + extraTokens) {
            throw new IllegalArgumentException("sample buffers hold " + out.seqLength() + "+"
                    + (out.rawText().length - out.seqLength()) + " positions, expected " + seqLength + "+" + extraTokens);
        }
        out.setSampleId(sampleId);
        int real = readRawText(indices.shuffleIndex()[sampleId], out.rawText());
        Arrays.fill(out.rawText(), real, out.rawText().length, options.padId());
        out.setNumRealTokens(real);
        if (options.interDocumentMasking()) {
            splitByParts(out);
        } else {
            splitByEod(out, options);
        }
    }

    /**
     * Splits a sample read elsewhere (the {@code raw_text} of {@link GptSample#rawText()}, {@code [L+x]}, of which the
     * first {@code numRealTokens} were read and the rest is padding) exactly as {@link #assemble} does: tokens, labels,
     * loss mask, positions and segment ids into {@code out}. Only for the default path (no inter-document masking,
     * which needs the document boundaries of the read).
     *
     * @throws IllegalArgumentException when {@code options} ask for inter-document masking or the sizes disagree
     */
    public static void split(int[] rawText, int numRealTokens, SampleOptions options, GptSample out) {
        if (options.interDocumentMasking()) {
            throw new IllegalArgumentException("options: inter-document masking needs the document parts of the read; "
                    + "use assemble()");
        }
        if (rawText.length != out.rawText().length) {
            throw new IllegalArgumentException("rawText has " + rawText.length + " tokens, the sample buffers "
                    + out.rawText().length);
        }
        if (numRealTokens < 0 || numRealTokens > rawText.length) {
            throw new IllegalArgumentException("numRealTokens = " + numRealTokens + " outside [0, " + rawText.length + "]");
        }
        System.arraycopy(rawText, 0, out.rawText(), 0, rawText.length);
        out.setNumRealTokens(numRealTokens);
        splitByEod(out, options);
    }

    /** Megatron's batch padding sample ({@code __getitem__(None)}): sample 0 with an all-zero loss mask. */
    public void assemblePadding(GptSample out) {
        assemble(0, out);
        Arrays.fill(out.lossMask(), 0f);
    }

    /** Reads sample {@code j} (before shuffling) into {@code raw}; returns the tokens read and records the parts. */
    private int readRawText(int j, int[] raw) {
        int[] rows = indices.sampleIndex();
        int[] documents = indices.documentIndex();
        int d0 = rows[2 * j];
        int o0 = rows[2 * j + 1];
        int d1 = rows[2 * j + 2];
        int o1 = rows[2 * j + 3];
        partCount = 0;
        if (d0 == d1) {
            return read(j, documents[d0], o0, o1 - o0 + extraTokens, raw, 0);
        }
        int n = read(j, documents[d0], o0, dataset.sequenceLength(documents[d0]) - o0, raw, 0);
        for (int d = d0 + 1; d < d1; d++) {
            n = read(j, documents[d], 0, dataset.sequenceLength(documents[d]), raw, n);
        }
        return read(j, documents[d1], 0, o1 + extraTokens, raw, n);
    }

    private int read(int j, int sequence, int offset, int count, int[] raw, int at) {
        if (count > raw.length - at) {
            throw new IllegalStateException("sample " + j + " reads more than L+x = " + raw.length
                    + " tokens: the indices do not fit this dataset");
        }
        dataset.readTokens(sequence, offset, count, raw, at);
        if (count > 0) {
            partLengths[partCount++] = count;
        }
        return at + count;
    }

    /** The default path: positions and segments restart after input EODs when the flags say so. */
    private static void splitByEod(GptSample out, SampleOptions options) {
        int seqLength = out.seqLength();
        int[] raw = out.rawText();
        int eod = options.eodId();
        int real = out.numRealTokens();
        int segment = 1;
        int position = 0;
        for (int i = 0; i < seqLength; i++) {
            int token = raw[i];
            out.positionIds()[i] = position;
            out.attentionSegmentIds()[i] = segment;
            out.segmentIds()[i] = i < real ? segment : 0;
            position++;
            if (token == eod) {
                if (options.resetPositionIds()) {
                    position = 0;
                }
                if (options.resetAttentionMask()) {
                    segment++;
                }
            }
            splitTokenAndLabel(raw, i, out, options);
        }
    }

    /** Megatron's inter-document path: one segment per document part read, positions restarting at each. */
    private void splitByParts(GptSample out) {
        if (extraTokens == 1 && partCount > 0 && --partLengths[partCount - 1] == 0) {
            partCount--;
        }
        int covered = 0;
        for (int p = 0; p < partCount; p++) {
            covered += partLengths[p];
        }
        if (covered < seqLength) {
            if (partCount == 0) {
                partLengths[partCount++] = 0;
            }
            partLengths[partCount - 1] += seqLength - covered;
        }
        int[] cu = out.cuSeqlens();
        int real = out.numRealTokens();
        int position = 0;
        int maxPart = 0;
        cu[0] = 0;
        for (int p = 0; p < partCount; p++) {
            int length = partLengths[p];
            maxPart = Math.max(maxPart, length);
            for (int i = position; i < position + length; i++) {
                out.positionIds()[i] = i - position;
                out.attentionSegmentIds()[i] = p + 1;
                out.segmentIds()[i] = i < real ? p + 1 : 0;
                splitTokenAndLabel(out.rawText(), i, out, options);
            }
            position += length;
            cu[p + 1] = position;
        }
        Arrays.fill(cu, partCount + 1, cu.length, seqLength);
        out.setMaxSeqlen(maxPart);
    }

    /** tokens, labels and loss mask of position i: EOD masking on the input as read, then pad substitution. */
    private static void splitTokenAndLabel(int[] raw, int i, GptSample out, SampleOptions options) {
        int pad = options.padId();
        int token = raw[i];
        int label = i + 1 < raw.length ? raw[i + 1] : pad;
        float mask = options.eodMaskLoss() && token == options.eodId() ? 0f : 1f;
        if (label == pad) {
            mask = 0f;
            label = 0;
        }
        out.tokens()[i] = token == pad ? 0 : token;
        out.labels()[i] = label;
        out.lossMask()[i] = mask;
    }

    /** Checks every index value against the dataset once, so that assembling never reads out of range. */
    private void checkIndices() {
        int[] documents = indices.documentIndex();
        for (int d = 0; d < documents.length; d++) {
            if (documents[d] < 0 || documents[d] >= dataset.sequenceCount()) {
                throw new IllegalArgumentException("document_index[" + d + "] = " + documents[d] + " outside the "
                        + dataset.sequenceCount() + " sequences of " + dataset);
            }
        }
        int[] rows = indices.sampleIndex();
        for (int k = 0; k < rows.length / 2; k++) {
            int position = rows[2 * k];
            int offset = rows[2 * k + 1];
            if (position < 0 || position >= documents.length) {
                throw new IllegalArgumentException("sample_index[" + k + "] position " + position + " outside [0, "
                        + documents.length + ")");
            }
            int length = dataset.sequenceLength(documents[position]);
            if (offset < 0 || offset > length) {
                throw new IllegalArgumentException("sample_index[" + k + "] offset " + offset + " outside [0, " + length
                        + "] (document " + documents[position] + ")");
            }
            if (k > 0 && (position < rows[2 * k - 2] || position == rows[2 * k - 2] && offset < rows[2 * k - 1])) {
                throw new IllegalArgumentException("sample_index[" + k + "] = (" + position + ", " + offset
                        + ") lies before row " + (k - 1));
            }
        }
        int samples = indices.sampleCount();
        for (int i = 0; i < samples; i++) {
            int j = indices.shuffleIndex()[i];
            if (j < 0 || j >= samples) {
                throw new IllegalArgumentException("shuffle_index[" + i + "] = " + j + " outside [0, " + samples + ")");
            }
        }
    }
}
