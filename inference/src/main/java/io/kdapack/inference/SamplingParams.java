package io.kdapack.inference;

import java.util.List;

/**
 * How one request generates (OpenAI completions names in brackets). Checked on construction; a bad value is an
 * {@link IllegalArgumentException} whose message starts with the field's name.
 *
 * @param maxTokens   [max_tokens] tokens to generate at most, ≥ 1
 * @param temperature [temperature] 0: greedy (arg-max, the lowest id on ties); &gt; 0: sample from
 *                    {@code softmax(logits / temperature)}
 * @param topK        [top_k] keep the k most likely tokens before sampling; 0: all
 * @param topP        [top_p] nucleus: keep the smallest set of most likely tokens whose probability reaches it,
 *                    in (0, 1]
 * @param seed        [seed] the request's random stream; a request's tokens depend on its prompt, these parameters
 *                    and this seed only
 * @param stop        [stop] strings that end the generation when the decoded text contains one (the text is cut
 *                    before it); at most {@link #MAX_STOP} of at most {@link #MAX_STOP_CHARS} characters
 * @param topLogprobs [logprobs] how many of the most likely tokens to record with their log-probabilities at each
 *                    generated position, 0 to {@link #MAX_TOP_LOGPROBS} (OpenAI's bound); recording them changes
 *                    no token
 */
public record SamplingParams(int maxTokens, double temperature, int topK, double topP, long seed, List<String> stop,
                             int topLogprobs) {
    public static final int MAX_STOP = 4;
    public static final int MAX_STOP_CHARS = 256;
    public static final int MAX_TOP_LOGPROBS = 5;

    public SamplingParams {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max_tokens must be >= 1, got " + maxTokens);
        }
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be a finite number >= 0, got " + temperature);
        }
        if (topK < 0) {
            throw new IllegalArgumentException("top_k must be >= 0 (0: no limit), got " + topK);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p must be in (0, 1], got " + topP);
        }
        if (topLogprobs < 0 || topLogprobs > MAX_TOP_LOGPROBS) {
            throw new IllegalArgumentException("logprobs must be in [0, " + MAX_TOP_LOGPROBS
                    + "] (alternatives recorded per token), got " + topLogprobs);
        }
        stop = stop == null ? List.of() : List.copyOf(stop);
        if (stop.size() > MAX_STOP) {
            throw new IllegalArgumentException("stop: at most " + MAX_STOP + " strings, got " + stop.size());
        }
        for (String s : stop) {
            if (s.isEmpty() || s.length() > MAX_STOP_CHARS) {
                throw new IllegalArgumentException("stop: each string must have 1 to " + MAX_STOP_CHARS
                        + " characters, got " + s.length());
            }
        }
    }

    /** Generation that records no alternatives ({@code topLogprobs} 0). */
    public SamplingParams(int maxTokens, double temperature, int topK, double topP, long seed, List<String> stop) {
        this(maxTokens, temperature, topK, topP, seed, stop, 0);
    }

    /** Greedy decoding of up to {@code maxTokens} tokens. */
    public static SamplingParams greedy(int maxTokens) {
        return new SamplingParams(maxTokens, 0, 0, 1, 0, List.of());
    }
}
