package io.kdapack.training.pipeline;

import io.kdapack.core.model.MicroBatch;

/**
 * Turns raw samples into the model's packed micro-batch (the segmenter stage, architecture §4): inputs and targets,
 * the loss mask, positions restarted at each document, segment ids (a new document begins after each EOD; the
 * EOD belongs to the document it ends) and, with MTP, the rolled labels and mask. Pure function of its input;
 * may run on any thread.
 */
public interface BatchSegmenter {

    /** @throws Exception any failure; it fails the job with its message recorded */
    MicroBatch segment(RawMicroBatch raw) throws Exception;
}
