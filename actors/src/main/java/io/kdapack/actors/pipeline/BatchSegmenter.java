package io.kdapack.actors.pipeline;

/**
 * Turns raw samples into a packed batch (the segmenter stage, DESIGN §4): inputs and targets, the loss
 * mask, positions restarted at each document, and segment ids (a new document begins after each EOD; the
 * EOD belongs to the document it ends). Pure function of its input; may run on any thread.
 */
public interface BatchSegmenter {

    /** @throws Exception any failure; it fails the job with its message recorded */
    PackedBatch segment(RawMicroBatch raw) throws Exception;
}
