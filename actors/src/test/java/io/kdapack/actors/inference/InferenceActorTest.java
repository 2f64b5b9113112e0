package io.kdapack.actors.inference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.inference.FinishReason;
import io.kdapack.inference.Generation;
import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.SamplingParams;
import io.kdapack.inference.TinyServing;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class InferenceActorTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final Path MODEL = Path.of("tiny-run");

    @AfterAll
    static void shutDown() {
        KIT.shutdownTestKit();
    }

    /** One engine for every "checkpoint": the tiny byte-vocabulary model. */
    private static ModelSource tinySource(InferenceEngine engine) {
        return new ModelSource() {
            @Override
            public Optional<Path> latestCheckpoint(Path model) {
                return model.equals(MODEL) ? Optional.of(Path.of("step-1")) : Optional.empty();
            }

            @Override
            public InferenceEngine load(Path model, Path checkpoint, InferenceLimits limits) {
                return engine;
            }
        };
    }

    private static InferenceLimits limits(int maxSequences, int queue, long budget) {
        return new InferenceLimits(maxSequences, queue, budget, 512, 64, 4, 16, 2, 3, 2);
    }

    /** Collects what the actor reports for one request. */
    static final class Collected implements GenerationSink {
        final List<List<Integer>> tokens = new ArrayList<>();
        final List<List<Double>> logprobs = new ArrayList<>();
        final List<StringBuilder> text = new ArrayList<>();
        final List<FinishReason> finish = new ArrayList<>();
        final CompletableFuture<String> outcome = new CompletableFuture<>();

        Collected(int choices) {
            for (int i = 0; i < choices; i++) {
                tokens.add(new ArrayList<>());
                logprobs.add(new ArrayList<>());
                text.add(new StringBuilder());
                finish.add(null);
            }
        }

        @Override
        public void accepted() {
        }

        @Override
        public void refused(String reason, int retryAfterSeconds) {
            outcome.complete("refused " + retryAfterSeconds);
        }

        @Override
        public void invalid(String field, String message) {
            outcome.complete("invalid " + field + ": " + message);
        }

        @Override
        public void failed(Exception cause) {
            outcome.complete("failed " + cause);
        }

        @Override
        public void progress(List<ChoiceDelta> deltas, int promptTokens, int completionTokens, boolean done) {
            for (ChoiceDelta d : deltas) {
                for (int id : d.tokenIds()) {
                    tokens.get(d.index()).add(id);
                }
                for (double lp : d.logprobs()) {
                    logprobs.get(d.index()).add(lp);
                }
                text.get(d.index()).append(d.text());
                if (d.finishReason() != null) {
                    finish.set(d.index(), d.finishReason());
                }
            }
            if (done) {
                outcome.complete("done");
            }
        }

        String await() throws Exception {
            return outcome.get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void concurrentRequestsEachGetWhatTheyWouldGetAlone() throws Exception {
        InferenceEngine engine = TinyServing.engine(31, 16);
        InferenceGauges gauges = new InferenceGauges();
        ActorRef<InferenceActor.Command> actor = KIT.spawn(InferenceActor.create(limits(8, 16, 1L << 30),
                tinySource(engine), gauges));
        Random random = new Random(2);
        List<int[]> prompts = new ArrayList<>();
        List<SamplingParams> params = new ArrayList<>();
        List<Collected> sinks = new ArrayList<>();
        // A text prompt goes through the model's tokenizer (bytes).
        Collected text = new Collected(1);
        actor.tell(new InferenceActor.Submit("text", MODEL, List.of(PromptInput.text("kda")),
                SamplingParams.greedy(4), text));
        for (int i = 0; i < 12; i++) {
            prompts.add(TinyServing.randomPrompt(random, 1 + random.nextInt(40)));
            params.add(new SamplingParams(3 + random.nextInt(10), i % 3 == 0 ? 0 : 1.0, i % 2 == 0 ? 0 : 8, 0.95, i,
                    List.of()));
            Collected sink = new Collected(1);
            sinks.add(sink);
            actor.tell(new InferenceActor.Submit("r" + i, MODEL, List.of(PromptInput.ids(prompts.get(i))), params.get(i), sink));
        }
        for (int i = 0; i < sinks.size(); i++) {
            assertEquals("done", sinks.get(i).await(), "request " + i);
        }
        assertEquals("done", text.await());
        Generation kda = engine.start(new int[] {'k', 'd', 'a'}, SamplingParams.greedy(4));
        engine.runToEnd(List.of(kda), 1);
        assertArrayEquals(kda.tokens(), text.tokens.get(0).stream().mapToInt(Integer::intValue).toArray());
        for (int i = 0; i < sinks.size(); i++) {
            Generation alone = engine.start(prompts.get(i), params.get(i));
            engine.runToEnd(List.of(alone), 1);
            Collected got = sinks.get(i);
            assertArrayEquals(alone.tokens(), got.tokens.get(0).stream().mapToInt(Integer::intValue).toArray(),
                    "request " + i);
            assertArrayEquals(alone.logprobs(), got.logprobs.get(0).stream().mapToDouble(Double::doubleValue).toArray(),
                    "request " + i);
            assertEquals(alone.text(), got.text.get(0).toString());
            assertEquals(alone.finishReason(), got.finish.get(0));
        }
        awaitIdle(gauges);
    }

    @Test
    void beyondSlotsAndQueueRequestsAreRefusedAndCancelFreesTheSlot() throws Exception {
        InferenceEngine engine = TinyServing.engine(32, 16);
        InferenceGauges gauges = new InferenceGauges();
        ActorRef<InferenceActor.Command> actor = KIT.spawn(InferenceActor.create(limits(1, 1, 1L << 30),
                tinySource(engine), gauges));
        Collected first = new Collected(1);
        Collected second = new Collected(1);
        Collected third = new Collected(1);
        SamplingParams longRun = SamplingParams.greedy(64);
        actor.tell(new InferenceActor.Submit("a", MODEL, List.of(PromptInput.ids(new int[] {1, 2, 3})), longRun, first));
        actor.tell(new InferenceActor.Submit("b", MODEL, List.of(PromptInput.ids(new int[] {4, 5})), SamplingParams.greedy(2), second));
        actor.tell(new InferenceActor.Submit("c", MODEL, List.of(PromptInput.ids(new int[] {6})), SamplingParams.greedy(2), third));
        assertEquals("refused 3", third.await());
        actor.tell(new InferenceActor.Cancel("a"));
        assertEquals("done", second.await(), "the queued request runs once the cancelled one left");
        assertTrue(first.tokens.get(0).size() < 64, "the cancelled request stopped early");
        awaitIdle(gauges);
    }

    @Test
    void badRequestsAreInvalidNamingTheField() throws Exception {
        InferenceEngine engine = TinyServing.engine(33, 16);
        ActorRef<InferenceActor.Command> actor = KIT.spawn(InferenceActor.create(limits(4, 4, 20_000),
                tinySource(engine), new InferenceGauges()));
        assertEquals("invalid max_tokens: max_tokens must be <= 64, got 65",
                submit(actor, List.of(PromptInput.ids(new int[] {1})), SamplingParams.greedy(65)));
        assertTrue(submit(actor, List.of(PromptInput.ids(new int[] {1, 300})), SamplingParams.greedy(1))
                .startsWith("invalid prompt: prompt: token id 300 at index 1"));
        assertTrue(submit(actor, List.of(PromptInput.ids(new int[0])), SamplingParams.greedy(1))
                .startsWith("invalid prompt:"));
        assertTrue(submit(actor, List.of(PromptInput.text("")), SamplingParams.greedy(1))
                .startsWith("invalid prompt:"));
        assertTrue(submit(actor, List.of(PromptInput.ids(new int[500])), SamplingParams.greedy(13)).startsWith("invalid max_tokens:"));
        assertTrue(submit(actor, List.of(PromptInput.ids(new int[400])), SamplingParams.greedy(60))
                .startsWith("invalid max_tokens: the request needs"), "over the whole state budget");
        Collected unknown = new Collected(1);
        actor.tell(new InferenceActor.Submit("u", Path.of("elsewhere"), List.of(PromptInput.ids(new int[] {1})),
                SamplingParams.greedy(1), unknown));
        assertTrue(unknown.await().contains("model: elsewhere has no checkpoint"), unknown.await());
    }

    private static String submit(ActorRef<InferenceActor.Command> actor, List<PromptInput> prompts,
                                 SamplingParams params)
            throws Exception {
        Collected sink = new Collected(prompts.size());
        actor.tell(new InferenceActor.Submit("x" + System.nanoTime(), MODEL, prompts, params, sink));
        return sink.await();
    }

    private static void awaitIdle(InferenceGauges gauges) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((gauges.activeSequences() != 0 || gauges.reservedStateBytes() != 0) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, gauges.activeSequences());
        assertEquals(0, gauges.queuedRequests());
        assertEquals(0, gauges.reservedStateBytes());
        assertEquals(0, gauges.stateBytes());
    }
}
