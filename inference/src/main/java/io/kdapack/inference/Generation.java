package io.kdapack.inference;

import io.kdapack.core.model.SequenceState;
import io.kdapack.data.tokenizer.Tokenizer;
import java.util.Arrays;

/**
 * One request's sequence in an {@link InferenceEngine}: its prompt and parameters, its decoding state while it runs,
 * and what it has generated. Advanced only by the engine, on the engine's thread; the getters may be read there
 * between steps.
 */
public final class Generation {
    private final int[] prompt;
    private final SamplingParams params;
    private final Sampler sampler;
    private final Tokenizer tokenizer;
    private SequenceState state;
    private int prefilled;
    private int[] generated = new int[8];
    private double[] logprobs = new double[8];
    /** Per generated token, when {@code params.topLogprobs() > 0}: its most likely alternatives. */
    private Sampler.Alternatives[] alternatives;
    private int count;
    private String text = "";
    private FinishReason finish;

    Generation(int[] prompt, SamplingParams params, SequenceState state, Tokenizer tokenizer) {
        this.prompt = prompt;
        this.params = params;
        this.sampler = new Sampler(params);
        this.alternatives = params.topLogprobs() > 0 ? new Sampler.Alternatives[8] : null;
        this.state = state;
        this.tokenizer = tokenizer;
    }

    public int[] prompt() {
        return prompt.clone();
    }

    public SamplingParams params() {
        return params;
    }

    /** Generated ids so far. */
    public int[] tokens() {
        return Arrays.copyOf(generated, count);
    }

    /** {@code ln p(tokens[i])} under the model's softmax at temperature 1. */
    public double[] logprobs() {
        return Arrays.copyOf(logprobs, count);
    }

    /**
     * At each generated position, the {@code params().topLogprobs()} most likely tokens and their {@code ln p} at
     * temperature 1, most likely first; empty when none were asked for.
     */
    public Sampler.Alternatives[] alternatives() {
        return alternatives == null ? new Sampler.Alternatives[0] : Arrays.copyOf(alternatives, count);
    }

    /** Number of generated tokens. */
    public int generatedCount() {
        return count;
    }

    /**
     * The text of the generated tokens (cut before a stop string once one appeared). While the generation runs, only
     * {@link #stableText()} is final.
     */
    public String text() {
        return text;
    }

    /**
     * The prefix of {@link #text()} that later tokens cannot change: all of it once finished; while running, without
     * a trailing replacement character (an incomplete UTF-8 sequence) and without the characters that could still
     * begin a stop string.
     */
    public String stableText() {
        if (finish != null) {
            return text;
        }
        int end = text.length();
        while (end > 0 && text.charAt(end - 1) == '\uFFFD') {
            end--;
        }
        int holdBack = 0;
        for (String stop : params.stop()) {
            holdBack = Math.max(holdBack, stop.length() - 1);
        }
        return text.substring(0, Math.max(0, end - holdBack));
    }

    /** Null while running. */
    public FinishReason finishReason() {
        return finish;
    }

    public boolean finished() {
        return finish != null;
    }

    /** Bytes of decoding state held now (0 once finished). */
    public long stateBytes() {
        return state == null ? 0 : state.bytes();
    }

    /** Tokens of the prompt not yet prefilled. */
    int promptRemaining() {
        return prompt.length - prefilled;
    }

    SequenceState state() {
        return state;
    }

    /** The next {@code max} prompt tokens, marked as consumed. */
    int[] takePrompt(int max) {
        int length = Math.min(max, promptRemaining());
        int[] piece = Arrays.copyOfRange(prompt, prefilled, prefilled + length);
        prefilled += length;
        return piece;
    }

    /** The token to feed next when decoding: the last one generated. */
    int lastToken() {
        return generated[count - 1];
    }

    /** Samples a token from {@code logits[offset … offset+vocab)}, records it and decides whether this ends it. */
    void accept(float[] logits, int offset, int vocab, int eodId) {
        int token = sampler.next(logits, offset, vocab);
        if (count == generated.length) {
            generated = Arrays.copyOf(generated, 2 * count);
            logprobs = Arrays.copyOf(logprobs, 2 * count);
            if (alternatives != null) {
                alternatives = Arrays.copyOf(alternatives, 2 * count);
            }
        }
        generated[count] = token;
        Sampler.LogSoftmax logSoftmax = Sampler.LogSoftmax.of(logits, offset, vocab);
        logprobs[count] = logSoftmax.at(logits[offset + token]);
        if (alternatives != null) {
            alternatives[count] = Sampler.top(logits, offset, vocab, params.topLogprobs(), logSoftmax);
        }
        count++;
        text = decode(tokens());
        for (String stop : params.stop()) {
            int at = text.indexOf(stop);
            if (at >= 0) {
                text = text.substring(0, at);
                finish(FinishReason.STOP);
                return;
            }
        }
        if (token == eodId) {
            finish(FinishReason.STOP);
        } else if (count == params.maxTokens()) {
            finish(FinishReason.LENGTH);
        }
    }

    /** Ends the generation and drops its decoding state. */
    void finish(FinishReason reason) {
        if (finish == null) {
            finish = reason;
        }
        state = null;
    }

    private String decode(int[] ids) {
        int[] known = Arrays.stream(ids).filter(id -> id < tokenizer.vocabSize()).toArray();
        return tokenizer.decode(known, 0, known.length);
    }
}
