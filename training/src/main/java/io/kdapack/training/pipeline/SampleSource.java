package io.kdapack.training.pipeline;

import java.io.IOException;

/**
 * Where a job's training samples come from, in Megatron's GPT sample order (the loader stage).
 *
 * <p>Micro-batches are addressed by their global index, so a job resumed at optimizer step {@code s} with
 * {@code M} micro-batches per step continues at index {@code s·M} and sees exactly the micro-batches an
 * uninterrupted run would have seen. Calls come from one actor at a time, in increasing index order; an
 * implementation may block (file I/O), and is never called from the compute thread.
 */
public interface SampleSource extends AutoCloseable {

    /**
     * The raw micro-batch at {@code index}: {@code B} samples of {@code L+1} tokens each.
     *
     * @throws Exception any failure; it fails the job with its message recorded
     */
    RawMicroBatch load(long index) throws Exception;

    /** Releases files and buffers; called once when the loader stops. */
    @Override
    default void close() throws IOException {
    }
}
