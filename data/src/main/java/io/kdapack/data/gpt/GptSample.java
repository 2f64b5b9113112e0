package io.kdapack.data.gpt;

/**
 * Reusable buffers for one assembled sample of L positions; {@link GptSampleAssembler} overwrites them, so assembling
 * allocates nothing. The accessors return the live buffers (no copies) under Megatron's tensor names.
 */
public final class GptSample {
    private final int[] rawText;             // [L+x]
    private final int[] tokens;              // [L]
    private final int[] labels;              // [L]
    private final float[] lossMask;          // [L]
    private final int[] positionIds;         // [L]
    private final int[] attentionSegmentIds; // [L]
    private final int[] segmentIds;          // [L]
    private final int[] cuSeqlens;           // [L+1]
    private int sampleId;
    private int numRealTokens;
    private int maxSeqlen;

    /** Buffers for samples of {@code seqLength} positions reading {@code extraTokens} more. */
    public GptSample(int seqLength, int extraTokens) {
        rawText = new int[seqLength + extraTokens];
        tokens = new int[seqLength];
        labels = new int[seqLength];
        lossMask = new float[seqLength];
        positionIds = new int[seqLength];
        attentionSegmentIds = new int[seqLength];
        segmentIds = new int[seqLength];
        cuSeqlens = new int[seqLength + 1];
    }

    /** L. */
    public int seqLength() {
        return tokens.length;
    }

    /** {@code [L+x]} the tokens read, padded at the end with the pad id ({@code raw_text}). */
    public int[] rawText() {
        return rawText;
    }

    /** {@code [L]} input ids, pad ids replaced by 0. */
    public int[] tokens() {
        return tokens;
    }

    /** {@code [L]} target ids, pad ids replaced by 0. */
    public int[] labels() {
        return labels;
    }

    /** {@code [L]} 1 where the position counts in the loss, else 0. */
    public float[] lossMask() {
        return lossMask;
    }

    /** {@code [L]} position ids. */
    public int[] positionIds() {
        return positionIds;
    }

    /**
     * {@code [L]} attention segments as Megatron's dense mask has them (the golden files' convention): 1-based, padding
     * in the segment before it. Query q sees key k iff {@code k <= q} and both have the same id.
     */
    public int[] attentionSegmentIds() {
        return attentionSegmentIds;
    }

    /** {@code [L]} kdapack segment ids: {@link #attentionSegmentIds()} with padding positions set to 0. */
    public int[] segmentIds() {
        return segmentIds;
    }

    /** {@code [L+1]} Megatron's {@code cu_seqlens}, padded with L (inter-document masking only). */
    public int[] cuSeqlens() {
        return cuSeqlens;
    }

    /** The dataset index assembled last. */
    public int sampleId() {
        return sampleId;
    }

    /** Leading entries of {@link #rawText()} that are real tokens ({@code num_real_tokens}). */
    public int numRealTokens() {
        return numRealTokens;
    }

    /** Largest segment, {@code max_seqlen} (inter-document masking only). */
    public int maxSeqlen() {
        return maxSeqlen;
    }

    void setSampleId(int sampleId) {
        this.sampleId = sampleId;
    }

    void setNumRealTokens(int numRealTokens) {
        this.numRealTokens = numRealTokens;
    }

    void setMaxSeqlen(int maxSeqlen) {
        this.maxSeqlen = maxSeqlen;
    }
}
