package io.kdapack.inference;

import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaRecurrent;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.SequenceState;
import io.kdapack.data.tokenizer.Tokenizer;
import java.util.ArrayList;
import java.util.List;

/**
 * Generates with a {@link HybridModel} (DESIGN §6), plain Java, one thread at a time. A {@link #step} runs every
 * sequence that still has prompt left through packed prefill calls (pieces of at most {@code prefillChunk} tokens,
 * packed into calls of at most {@link #prefillCallTokens} tokens, the chunked KDA kernels, the states carried from piece
 * to piece), and every sequence that is generating
 * through one batched decode call (one token each, the token-by-token KDA recurrence). Prefill and decode never
 * share a call, and a prompt's pieces are cut at multiples of {@code prefillChunk} whatever else runs, so a
 * request's tokens depend only on its prompt, parameters and seed: the model's inference forward gives each
 * sequence bitwise the same result alone or in any batch, with any thread count.
 */
public final class InferenceEngine {
    /**
     * Floats of one {@code [T, d]} activation of a packed prefill call at most (256 KB): a call packs pieces while
     * {@code T · hidden_size} stays within it ({@link #prefillCallTokens}; a piece longer than that runs alone). A call
     * over thousands of tokens is slower than one call per prompt: its activations ({@code [T,d]} per layer, several
     * per layer, and the layer's weights) leave the caches. The budget is in floats, not tokens, because where that
     * happens moves with the width: on the shared 2-core VM, 64 prompts (8232 tokens), interleaved medians of 7–9 runs
     * against one call per prompt ({@code kdapack bench generate}, docs/inference.md): the default model (d = 64)
     * 1.19× in calls of 512 tokens, 1.16× of 1024, 0.33× in one call; the larger one (d = 256) 1.21× of 256, 1.40× of
     * 384, 0.75× of 1024, 0.46× in one call. Results do not depend on the grouping: a sequence's result is bitwise the
     * same in any packed call.
     */
    public static final int PREFILL_CALL_FLOATS = 64 * 1024;

    private final HybridModel model;
    private final Tokenizer tokenizer;
    private final KdaBackend prefillOp;
    private final KdaBackend decodeOp;
    private final int prefillChunk;
    private final int maxContext;
    private final int prefillCallTokens;

    /**
     * @param threads      worker threads of the decode recurrence (prefill uses the model's KDA backend)
     * @param prefillChunk prompt tokens per sequence and prefill call, ≥ 1
     * @param maxContext   prompt plus generated tokens a sequence may reach, ≥ 2
     */
    public InferenceEngine(HybridModel model, Tokenizer tokenizer, int threads, int prefillChunk, int maxContext) {
        if (prefillChunk < 1) {
            throw new IllegalArgumentException("prefill_chunk must be >= 1, got " + prefillChunk);
        }
        if (maxContext < 2) {
            throw new IllegalArgumentException("max_context must be >= 2, got " + maxContext);
        }
        this.model = model;
        this.tokenizer = tokenizer;
        // Chunks aligned to each prompt: a request's logits must not depend on what it is packed with, bitwise.
        this.prefillOp = model.kdaBackend() instanceof KdaChunked chunked ? chunked.documentAligned()
                : model.kdaBackend();
        this.decodeOp = new KdaRecurrent(threads);
        this.prefillChunk = prefillChunk;
        this.maxContext = maxContext;
        this.prefillCallTokens = prefillCallTokens(model.config());
    }

    /** Tokens of one packed prefill call at most for {@code config}: {@link #PREFILL_CALL_FLOATS} / hidden size, ≥ 1. */
    public static int prefillCallTokens(io.kdapack.core.model.ModelConfig config) {
        return Math.max(1, PREFILL_CALL_FLOATS / config.hiddenSize());
    }

    public HybridModel model() {
        return model;
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    public int vocabSize() {
        return model.config().vocabSize();
    }

    public int maxContext() {
        return maxContext;
    }

    /**
     * Bytes of state a request of {@code prompt} tokens and {@code maxTokens} generated tokens holds at its longest
     * (what admission reserves).
     */
    public long stateBytesAtMost(int promptTokens, int maxTokens) {
        return model.stateBytes((long) promptTokens + maxTokens);
    }

    /**
     * Checks a request and makes its generation (no compute yet). Errors name the field: {@code prompt} (empty, an
     * id outside the vocabulary, longer than the context) or {@code max_tokens} (prompt plus max_tokens over the
     * context).
     */
    public Generation start(int[] prompt, SamplingParams params) {
        checkPrompt(prompt, params.maxTokens());
        return new Generation(prompt.clone(), params, model.newSequence(), tokenizer);
    }

    /** The checks of {@link #start}, without making anything. */
    public void checkPrompt(int[] prompt, int maxTokens) {
        if (prompt == null || prompt.length == 0) {
            throw new IllegalArgumentException("prompt must hold at least one token");
        }
        int vocab = vocabSize();
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= vocab) {
                throw new IllegalArgumentException("prompt: token id " + prompt[i] + " at index " + i
                        + " is outside the model's vocabulary [0, " + vocab + ")");
            }
        }
        if (prompt.length >= maxContext) {
            throw new IllegalArgumentException("prompt: " + prompt.length + " tokens, the maximum context is "
                    + maxContext + " (prompt and generated tokens together)");
        }
        if ((long) prompt.length + maxTokens > maxContext) {
            throw new IllegalArgumentException("max_tokens: " + maxTokens + " after a prompt of " + prompt.length
                    + " tokens exceeds the maximum context of " + maxContext);
        }
    }

    /**
     * Advances every unfinished generation of {@code active} by one step: a prompt by one piece (its first token is
     * sampled after its last piece), a generating sequence by one token. Finished ones are skipped.
     */
    public void step(List<Generation> active) {
        List<Generation> prefilling = new ArrayList<>();
        List<Generation> decoding = new ArrayList<>();
        for (Generation g : active) {
            if (!g.finished()) {
                (g.promptRemaining() > 0 ? prefilling : decoding).add(g);
            }
        }
        int from = 0;
        while (from < prefilling.size()) {
            List<int[]> pieces = new ArrayList<>();
            int tokens = 0;
            int to = from;
            while (to < prefilling.size()) {
                int length = Math.min(prefillChunk, prefilling.get(to).promptRemaining());
                if (!pieces.isEmpty() && tokens + length > prefillCallTokens) {
                    break;
                }
                pieces.add(prefilling.get(to).takePrompt(prefillChunk));
                tokens += length;
                to++;
            }
            List<Generation> call = prefilling.subList(from, to);
            float[] logits = model.extend(pieces.toArray(new int[0][]), states(call), prefillOp);
            for (int i = 0; i < call.size(); i++) {
                Generation g = call.get(i);
                if (g.promptRemaining() == 0) {
                    g.accept(logits, i * vocabSize(), vocabSize(), eodId());
                }
            }
            from = to;
        }
        if (!decoding.isEmpty()) {
            int[][] pieces = new int[decoding.size()][];
            for (int i = 0; i < pieces.length; i++) {
                pieces[i] = new int[] {decoding.get(i).lastToken()};
            }
            float[] logits = model.extend(pieces, states(decoding), decodeOp);
            for (int i = 0; i < pieces.length; i++) {
                decoding.get(i).accept(logits, i * vocabSize(), vocabSize(), eodId());
            }
        }
    }

    /** Ends {@code generation} at once and frees its state. */
    public void cancel(Generation generation) {
        generation.finish(FinishReason.CANCELLED);
    }

    /**
     * Runs {@code generations} to the end, at most {@code maxSequences} at a time (the next one joins as soon as
     * one finishes): what {@code kdapack generate} does.
     */
    public void runToEnd(List<Generation> generations, int maxSequences) {
        if (maxSequences < 1) {
            throw new IllegalArgumentException("max sequences must be >= 1, got " + maxSequences);
        }
        List<Generation> active = new ArrayList<>();
        int next = 0;
        while (next < generations.size() || !active.isEmpty()) {
            while (active.size() < maxSequences && next < generations.size()) {
                active.add(generations.get(next++));
            }
            step(active);
            active.removeIf(Generation::finished);
        }
    }

    /** The id that ends a generation: the tokenizer's end of document, when the model has it. */
    private int eodId() {
        int eod = tokenizer.eodId();
        return eod < vocabSize() ? eod : -1;
    }

    private static SequenceState[] states(List<Generation> generations) {
        SequenceState[] states = new SequenceState[generations.size()];
        for (int i = 0; i < states.length; i++) {
            states[i] = generations.get(i).state();
        }
        return states;
    }
}
