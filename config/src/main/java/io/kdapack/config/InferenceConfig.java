package io.kdapack.config;

/**
 * The bounds of the server's inference side ({@code server.inference}; {@code POST /v1/completions}): every resource
 * a completion request can take. The inference actor's {@code InferenceLimits} is made from this section.
 *
 * @param maxSequences      sequences generating at once, all models together (a request's prompts count one each);
 *                          further requests wait in the queue
 * @param maxQueuedRequests requests waiting for sequences or state memory; beyond it a request is refused with 429
 * @param stateBudgetBytes  decoding state that the running requests may reserve together, each at its longest
 *                          ({@code prompt + max_tokens} tokens)
 * @param maxContext        prompt plus generated tokens of one sequence
 * @param maxTokens         largest {@code max_tokens} of a request
 * @param maxPrompts        prompts in one request
 * @param prefillChunk      prompt tokens of one sequence per prefill step (a longer prompt takes several)
 * @param maxModels         models kept loaded; beyond it the least recently used idle one is dropped
 * @param retryAfterSeconds the {@code Retry-After} of a 429
 * @param threads           compute threads of each loaded model; 0: all processors
 */
public record InferenceConfig(int maxSequences, int maxQueuedRequests, long stateBudgetBytes, int maxContext,
                              int maxTokens, int maxPrompts, int prefillChunk, int maxModels, int retryAfterSeconds,
                              int threads) {

    public static InferenceConfig defaults() {
        return new InferenceConfig(64, 256, 1L << 30, 8192, 2048, 16, 512, 4, 1, 0);
    }
}
