package io.kdapack.actors.inference;

import io.kdapack.inference.FinishReason;
import java.util.List;

/**
 * Where the inference actor reports one request. Called on the actor's thread, in this order: one of
 * {@link #refused}, {@link #invalid} or {@link #failed} (then nothing more); or {@link #accepted}, then
 * {@link #progress} once a step while the request runs, the last call with {@code done} true ({@link #failed} may
 * still end it if the computation fails). Implementations must not block (hand the work to another
 * thread, such as the connection's event loop).
 */
public interface GenerationSink {

    /** What one choice (one prompt of the request) produced in one step. */
    /**
     * @param tokenIds     the new tokens
     * @param tokenTexts   each new token's text alone
     * @param logprobs     {@code ln p} of each new token under the model's softmax at temperature 1
     * @param alternatives each new token's most likely alternatives (as many as the request's {@code logprobs}
     *                     asked; empty when it asked none)
     * @param text         the new stable text (see {@code Generation.stableText})
     * @param finishReason set in the choice's last delta
     */
    record ChoiceDelta(int index, int[] tokenIds, String[] tokenTexts, double[] logprobs, TopTokens[] alternatives,
                       String text, FinishReason finishReason) {
    }

    /** The most likely tokens at one position, most likely first: ids, each one's text alone, {@code ln p}. */
    record TopTokens(int[] ids, String[] texts, double[] logprobs) {
    }

    /** The request passed every check and runs now or waits its turn: nothing but {@link #progress} follows. */
    void accepted();

    /** Over capacity (sequences, state memory and queue all full): try again after {@code retryAfterSeconds}. */
    void refused(String reason, int retryAfterSeconds);

    /** The request cannot be served as asked; {@code field} names the request field at fault. */
    void invalid(String field, String message);

    /** The model could not be loaded or the computation failed. */
    void failed(Exception cause);

    /** New tokens of the choices that advanced (empty deltas are left out); {@code done} when all have finished. */
    void progress(List<ChoiceDelta> deltas, int promptTokens, int completionTokens, boolean done);
}
