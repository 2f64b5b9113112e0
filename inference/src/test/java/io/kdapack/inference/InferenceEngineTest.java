package io.kdapack.inference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.model.MicroBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class InferenceEngineTest {

    /** Mixed requests: greedy, plain temperature, top-k, top-p, each with its own seed. */
    private static List<SamplingParams> mixedParams() {
        return List.of(SamplingParams.greedy(12),
                new SamplingParams(9, 1.0, 0, 1.0, 1, List.of()),
                new SamplingParams(15, 0.7, 5, 1.0, 2, List.of()),
                new SamplingParams(7, 1.3, 0, 0.8, 3, List.of()),
                new SamplingParams(11, 1.0, 20, 0.9, 4, List.of()));
    }

    private static List<int[]> prompts() {
        Random random = new Random(8);
        return List.of(TinyServing.randomPrompt(random, 1), TinyServing.randomPrompt(random, 70),
                TinyServing.randomPrompt(random, 5), TinyServing.randomPrompt(random, 130),
                TinyServing.randomPrompt(random, 33));
    }

    private static List<Generation> run(InferenceEngine engine, int maxSequences) {
        List<Generation> generations = new ArrayList<>();
        List<int[]> prompts = prompts();
        List<SamplingParams> params = mixedParams();
        for (int i = 0; i < prompts.size(); i++) {
            generations.add(engine.start(prompts.get(i), params.get(i)));
        }
        engine.runToEnd(generations, maxSequences);
        return generations;
    }

    @Test
    void aRequestsTokensAndLogprobsDoNotDependOnTheBatchItShares() {
        InferenceEngine engine = TinyServing.engine(1, 16);
        List<Generation> together = run(engine, 5);
        List<Generation> inPairs = run(engine, 2);
        List<int[]> prompts = prompts();
        List<SamplingParams> params = mixedParams();
        for (int i = 0; i < prompts.size(); i++) {
            Generation alone = engine.start(prompts.get(i), params.get(i));
            engine.runToEnd(List.of(alone), 1);
            assertEquals(params.get(i).maxTokens(), alone.generatedCount(), "request " + i);
            assertEquals(FinishReason.LENGTH, alone.finishReason());
            assertArrayEquals(alone.tokens(), together.get(i).tokens(), "request " + i + " in a batch of 5");
            assertArrayEquals(alone.logprobs(), together.get(i).logprobs(), "request " + i + " in a batch of 5");
            assertArrayEquals(alone.tokens(), inPairs.get(i).tokens(), "request " + i + " joining two at a time");
            assertArrayEquals(alone.logprobs(), inPairs.get(i).logprobs(), "request " + i + " joining two at a time");
        }
    }

    @Test
    void greedyTokensAreTheArgMaxOfTheFullForwardAndLogprobsItsLogSoftmax() {
        InferenceEngine engine = TinyServing.engine(2, 16);
        int[] prompt = prompts().get(3);
        Generation g = engine.start(prompt, SamplingParams.greedy(10));
        engine.runToEnd(List.of(g), 1);
        int[] all = new int[prompt.length + g.generatedCount()];
        System.arraycopy(prompt, 0, all, 0, prompt.length);
        System.arraycopy(g.tokens(), 0, all, prompt.length, g.generatedCount());
        float[] logits = fullForward(engine, all);
        int vocab = engine.vocabSize();
        for (int i = 0; i < g.generatedCount(); i++) {
            int row = (prompt.length - 1 + i) * vocab;
            assertEquals(Sampler.argMax(logits, row, vocab), g.tokens()[i], "token " + i);
            double expected = Sampler.logProbability(logits, row, vocab, g.tokens()[i]);
            // Logits agree within 1e-5 relative (core's teacher-forced test); a log-probability of O(1) within 1e-4.
            assertEquals(expected, g.logprobs()[i], 1e-4, "logprob " + i);
        }
    }

    @Test
    void thePrefillChunkChangesRoundOffOnly() {
        List<Generation> small = run(TinyServing.engine(3, 7), 5);
        List<Generation> large = run(TinyServing.engine(3, 1024), 5);
        for (int i = 0; i < small.size(); i++) {
            if (small.get(i).params().temperature() == 0) {
                assertArrayEquals(large.get(i).tokens(), small.get(i).tokens(), "greedy request " + i);
            }
            double[] a = small.get(i).logprobs();
            double[] b = large.get(i).logprobs();
            assertEquals(a[0], b[0], 1e-4, "first logprob of request " + i);
        }
    }

    @Test
    void aStopStringEndsTheGenerationAndCutsTheText() {
        InferenceEngine engine = TinyServing.engine(4, 16);
        int[] prompt = prompts().get(1);
        SamplingParams free = new SamplingParams(60, 1.0, 0, 1.0, 9, List.of());
        Generation unstopped = engine.start(prompt, free);
        engine.runToEnd(List.of(unstopped), 1);
        String text = unstopped.text();
        int at = -1;
        for (int i = 1; i < text.length() && at < 0; i++) {
            if (Character.isLetterOrDigit(text.charAt(i))) {
                at = i;
            }
        }
        assertTrue(at > 0, "the sampled text holds a letter or digit after its first character: " + text);
        String stop = String.valueOf(text.charAt(at));
        Generation stopped = engine.start(prompt, new SamplingParams(60, 1.0, 0, 1.0, 9, List.of(stop)));
        engine.runToEnd(List.of(stopped), 1);
        assertEquals(FinishReason.STOP, stopped.finishReason());
        assertEquals(text.substring(0, text.indexOf(stop)), stopped.text());
        assertTrue(stopped.generatedCount() < unstopped.generatedCount());
        assertArrayEquals(Arrays.copyOf(unstopped.tokens(), stopped.generatedCount()), stopped.tokens());
    }

    @Test
    void cancelEndsAtOnce() {
        InferenceEngine engine = TinyServing.engine(5, 16);
        Generation g = engine.start(prompts().get(2), SamplingParams.greedy(50));
        engine.step(List.of(g));
        engine.step(List.of(g));
        engine.cancel(g);
        engine.step(List.of(g));
        assertEquals(FinishReason.CANCELLED, g.finishReason());
        assertEquals(2, g.generatedCount());
    }

    @Test
    void badPromptsAreRefusedNamingTheField() {
        InferenceEngine engine = TinyServing.engine(6, 16);
        assertMessage("prompt must hold at least one token",
                () -> engine.start(new int[0], SamplingParams.greedy(1)));
        assertMessage("prompt: token id 258 at index 1",
                () -> engine.start(new int[] {1, 258}, SamplingParams.greedy(1)));
        assertMessage("prompt: 512 tokens, the maximum context is 512",
                () -> engine.start(new int[512], SamplingParams.greedy(1)));
        assertMessage("max_tokens: 13 after a prompt of 500 tokens exceeds the maximum context of 512",
                () -> engine.start(new int[500], SamplingParams.greedy(13)));
        assertMessage("max_tokens must be >= 1, got 0", () -> SamplingParams.greedy(0));
        assertMessage("temperature must be a finite number >= 0, got -0.5",
                () -> new SamplingParams(1, -0.5, 0, 1, 0, List.of()));
        assertMessage("top_p must be in (0, 1], got 0.0", () -> new SamplingParams(1, 1, 0, 0, 0, List.of()));
        assertMessage("top_p must be in (0, 1], got 1.5", () -> new SamplingParams(1, 1, 0, 1.5, 0, List.of()));
        assertMessage("top_k must be >= 0", () -> new SamplingParams(1, 1, -1, 1, 0, List.of()));
    }

    private static void assertMessage(String expected, Runnable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().startsWith(expected), e.getMessage());
    }

    private static float[] fullForward(InferenceEngine engine, int[] tokens) {
        int n = tokens.length;
        int[] positions = new int[n];
        int[] segments = new int[n];
        for (int i = 0; i < n; i++) {
            positions[i] = i;
            segments[i] = 1;
        }
        return engine.model().logits(new MicroBatch(1, n, tokens, new int[n], new float[n], positions, segments, null,
                null));
    }
}
