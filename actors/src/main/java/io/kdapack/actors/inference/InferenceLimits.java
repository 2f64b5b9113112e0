package io.kdapack.actors.inference;

import io.kdapack.config.InferenceConfig;

/**
 * The bounds of the inference actor: every resource a completion request can take is limited here, and a request
 * beyond them is refused when it arrives, never accepted to fail later.
 *
 * @param maxSequences     sequences generating at once (all models together); a request's prompts count one each
 * @param queueCapacity    requests waiting for sequences or state memory; beyond it requests are refused (429)
 * @param stateBudgetBytes decoding state reserved by running requests, each at its longest
 *                         ({@code prompt + max_tokens} tokens, see {@code HybridModel.stateBytes})
 * @param maxContext       prompt plus generated tokens of one sequence
 * @param maxTokens        largest {@code max_tokens} of a request
 * @param maxPrompts       prompts in one request
 * @param prefillChunk     prompt tokens per sequence and prefill call (long prompts take several steps)
 * @param maxModels        models kept loaded; the least recently used idle one is dropped beyond it
 * @param retryAfterSeconds the {@code Retry-After} a refused request is given
 * @param threads          KDA threads of each loaded model (0: all processors)
 */
public record InferenceLimits(int maxSequences, int queueCapacity, long stateBudgetBytes, int maxContext, int maxTokens,
                              int maxPrompts, int prefillChunk, int maxModels, int retryAfterSeconds, int threads) {

    public InferenceLimits {
        positive("server.inference.max_sequences", maxSequences);
        if (queueCapacity < 0) {
            throw new IllegalArgumentException("server.inference.max_queued_requests must be >= 0, got " + queueCapacity);
        }
        if (stateBudgetBytes < 1) {
            throw new IllegalArgumentException("server.inference.state_budget_bytes must be >= 1, got " + stateBudgetBytes);
        }
        if (maxContext < 2) {
            throw new IllegalArgumentException("server.inference.max_context must be >= 2, got " + maxContext);
        }
        positive("server.inference.max_tokens", maxTokens);
        positive("server.inference.max_prompts", maxPrompts);
        positive("server.inference.prefill_chunk", prefillChunk);
        positive("server.inference.max_models", maxModels);
        positive("server.inference.retry_after_seconds", retryAfterSeconds);
        if (threads < 0) {
            throw new IllegalArgumentException("server.inference.threads must be >= 0, got " + threads);
        }
    }

    /**
     * The server's defaults ({@link InferenceConfig#defaults()}): 64 sequences, 256 waiting requests, 1 GiB of state,
     * 8192 tokens of context, 2048 tokens per request, 16 prompts per request, prefill pieces of 512 tokens, 4 models,
     * retry after 1 s, all processors.
     */
    public static InferenceLimits defaults() {
        return from(InferenceConfig.defaults());
    }

    /** The limits of the configuration's {@code server.inference} section (its keys are checked by the config module). */
    public static InferenceLimits from(InferenceConfig config) {
        return new InferenceLimits(config.maxSequences(), config.maxQueuedRequests(), config.stateBudgetBytes(),
                config.maxContext(), config.maxTokens(), config.maxPrompts(), config.prefillChunk(), config.maxModels(),
                config.retryAfterSeconds(), config.threads());
    }

    private static void positive(String key, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(key + " must be >= 1, got " + value);
        }
    }
}
