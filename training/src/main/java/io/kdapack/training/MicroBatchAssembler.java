package io.kdapack.training;

import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.segment.MtpRoll;
import io.kdapack.training.pipeline.RawMicroBatch;

/**
 * Turns {@code B} consecutive samples of the Megatron order into one {@link MicroBatch}: tokens, labels, loss mask,
 * positions (restarted per document when {@code reset_position_ids} is on) and kdapack segment ids (1-based per
 * document within a row, 0 for padding) as {@link io.kdapack.data.gpt.GptSampleAssembler} computes them, and, when the
 * model predicts {@code mtpDepth > 0} extra tokens, the MTP labels and mask rolled left within each segment
 * ({@link MtpRoll}). Micro-batch {@code k} holds dataset indices {@code [k·B, (k+1)·B)}.
 *
 * <p>{@link #raw} (reading, not thread safe) and {@link #segment} (splitting, thread safe) are the two halves of
 * {@link #microBatch}, for a pipeline that runs them in separate stages.
 */
public final class MicroBatchAssembler {
    private final MegatronSamples samples;
    private final int rows;
    private final int mtpDepth;
    private final GptSample sample;

    /**
     * @param rows     B, samples per micro-batch
     * @param mtpDepth the model's MTP depth: 0 (no MTP arrays) or 1
     */
    public MicroBatchAssembler(MegatronSamples samples, int rows, int mtpDepth) {
        if (rows < 1) {
            throw new IllegalArgumentException("rows (micro_batch_size) must be >= 1, got " + rows);
        }
        if (mtpDepth < 0 || mtpDepth > 1) {
            throw new IllegalArgumentException("mtpDepth must be 0 or 1 (a MicroBatch carries one rolled target), got "
                    + mtpDepth);
        }
        this.samples = samples;
        this.rows = rows;
        this.mtpDepth = mtpDepth;
        this.sample = samples.newSample();
    }

    /** B. */
    public int rows() {
        return rows;
    }

    /** Micro-batches available: whole groups of B samples. */
    public long microBatchCount() {
        return samples.sampleCount() / rows;
    }

    /** Micro-batch {@code index}: dataset indices {@code [index·B, (index+1)·B)}; {@link #segment} of {@link #raw}. */
    public MicroBatch microBatch(long index) {
        return segment(raw(index));
    }

    /**
     * The loader's half of {@link #microBatch}: the {@code raw_text} of the B samples of micro-batch {@code index}
     * ({@code [B, L+1]}) and how many tokens of each were read.
     */
    public RawMicroBatch raw(long index) {
        if (index < 0 || index >= microBatchCount()) {
            throw new IllegalArgumentException("micro-batch index " + index + " outside [0, " + microBatchCount() + ")");
        }
        int width = sample.rawText().length;
        int[] tokens = new int[rows * width];
        int[] realLengths = new int[rows];
        for (int b = 0; b < rows; b++) {
            samples.read(index * rows + b, sample);
            System.arraycopy(sample.rawText(), 0, tokens, b * width, width);
            realLengths[b] = sample.numRealTokens();
        }
        return new RawMicroBatch(index, rows, width, tokens, realLengths);
    }

    /**
     * The segmenter's half of {@link #microBatch}: splits each row as Megatron's GPT dataset does
     * ({@link GptSampleAssembler#split}) and adds the MTP targets. Thread safe (its buffers are its own).
     */
    public MicroBatch segment(RawMicroBatch raw) {
        int length = samples.seqLength();
        if (raw.batchSize() != rows || raw.sampleWidth() != length + 1) {
            throw new IllegalArgumentException("raw micro-batch " + raw.index() + " is [" + raw.batchSize() + ", "
                    + raw.sampleWidth() + "], expected [" + rows + ", " + (length + 1) + "]");
        }
        GptSample split = samples.newSample();
        int[] row = new int[raw.sampleWidth()];
        int size = rows * length;
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] lossMask = new float[size];
        int[] positions = new int[size];
        int[] segmentIds = new int[size];
        for (int b = 0; b < rows; b++) {
            System.arraycopy(raw.tokens(), b * row.length, row, 0, row.length);
            GptSampleAssembler.split(row, raw.realLengths()[b], samples.options(), split);
            int at = b * length;
            System.arraycopy(split.tokens(), 0, tokens, at, length);
            System.arraycopy(split.labels(), 0, labels, at, length);
            System.arraycopy(split.lossMask(), 0, lossMask, at, length);
            System.arraycopy(split.positionIds(), 0, positions, at, length);
            System.arraycopy(split.segmentIds(), 0, segmentIds, at, length);
        }
        return of(rows, length, tokens, labels, lossMask, positions, segmentIds, mtpDepth);
    }

    /** A micro-batch from its arrays {@code [B·L]}, with the MTP arrays rolled from the labels when {@code mtpDepth = 1}. */
    public static MicroBatch of(int rows, int length, int[] tokens, int[] labels, float[] lossMask, int[] positions,
                                int[] segmentIds, int mtpDepth) {
        int[] mtpLabels = null;
        float[] mtpMask = null;
        if (mtpDepth > 0) {
            mtpLabels = new int[labels.length];
            mtpMask = new float[labels.length];
            MtpRoll.roll(labels, lossMask, segmentIds, rows, length, mtpLabels, mtpMask);
        }
        return new MicroBatch(rows, length, tokens, labels, lossMask, positions, segmentIds, mtpLabels, mtpMask);
    }
}
