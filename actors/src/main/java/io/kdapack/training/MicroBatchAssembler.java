package io.kdapack.training;

import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.segment.MtpRoll;

/**
 * Turns {@code B} consecutive samples of the Megatron order into one {@link MicroBatch}: tokens, labels, loss mask,
 * positions (restarted per document when {@code reset_position_ids} is on) and kdapack segment ids (1-based per
 * document within a row, 0 for padding) as {@link io.kdapack.data.gpt.GptSampleAssembler} computes them, and, when the
 * model predicts {@code mtpDepth > 0} extra tokens, the MTP labels and mask rolled left within each segment
 * ({@link MtpRoll}). Micro-batch {@code k} holds dataset indices {@code [k·B, (k+1)·B)}.
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

    /** Micro-batch {@code index}: dataset indices {@code [index·B, (index+1)·B)}. */
    public MicroBatch microBatch(long index) {
        if (index < 0 || index >= microBatchCount()) {
            throw new IllegalArgumentException("micro-batch index " + index + " outside [0, " + microBatchCount() + ")");
        }
        int length = samples.seqLength();
        int size = rows * length;
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] lossMask = new float[size];
        int[] positions = new int[size];
        int[] segmentIds = new int[size];
        for (int b = 0; b < rows; b++) {
            samples.read(index * rows + b, sample);
            int at = b * length;
            System.arraycopy(sample.tokens(), 0, tokens, at, length);
            System.arraycopy(sample.labels(), 0, labels, at, length);
            System.arraycopy(sample.lossMask(), 0, lossMask, at, length);
            System.arraycopy(sample.positionIds(), 0, positions, at, length);
            System.arraycopy(sample.segmentIds(), 0, segmentIds, at, length);
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

    /** Segments (documents) of a micro-batch: runs of one non-zero segment id within a row. */
    public static long segmentCount(MicroBatch batch) {
        long count = 0;
        int[] ids = batch.segmentIds();
        for (int b = 0; b < batch.rows(); b++) {
            int previous = 0;
            for (int i = b * batch.length(); i < (b + 1) * batch.length(); i++) {
                if (ids[i] != 0 && ids[i] != previous) {
                    count++;
                }
                previous = ids[i];
            }
        }
        return count;
    }
}
