package io.kdapack.actors.inference;

import io.kdapack.inference.Generation;
import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.Sampler;
import io.kdapack.inference.SamplingParams;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Serves completion requests with continuous batching. Spawn it on the pinned compute dispatcher: every engine call
 * runs on its one thread.
 *
 * <p>Between two engine steps the actor takes the messages that came in: new requests join (admitted at once when
 * sequences and state memory allow, else queued, else refused), cancelled ones leave and free their slots. A step
 * then advances every running request of every loaded model: new prompts are prefilled together (one packed call
 * per model), generating sequences decode one token each (one batched call per model); the results go to each
 * request's {@link GenerationSink}; finished requests leave at once. While anything runs the actor sends itself the
 * next {@link Step}, after the messages already waiting, so no request waits longer than one step to join.
 *
 * <p>Bounds ({@link InferenceLimits}): a request is admitted only when its sequences fit {@code max_sequences} and
 * its worst-case state ({@code prompt + max_tokens} tokens per sequence) fits what is left of the state budget; a
 * request that cannot fit even an empty server is invalid, one that cannot fit now waits in a bounded FIFO queue,
 * and beyond the queue it is refused with a retry time. So an admitted request never fails for lack of memory.
 */
public final class InferenceActor extends AbstractBehavior<InferenceActor.Command> {

    public sealed interface Command permits Submit, Cancel, Step {
    }

    /**
     * A completion request.
     *
     * @param requestId unique among the requests in flight
     * @param model     the run or job directory to serve (its newest checkpoint); ignored with {@code engine}
     * @param engine    a prebuilt engine to serve instead (a running job's live weights, {@link ModelSource#live}),
     *                  or null
     * @param prompts   text or token ids of each prompt (one sequence each)
     */
    public record Submit(String requestId, Path model, InferenceEngine engine, List<PromptInput> prompts,
                         SamplingParams params, GenerationSink sink) implements Command {
        public Submit(String requestId, Path model, List<PromptInput> prompts, SamplingParams params,
                      GenerationSink sink) {
            this(requestId, model, null, prompts, params, sink);
        }
    }

    /** Ends a request at once (its client went away); unknown ids are ignored. */
    public record Cancel(String requestId) implements Command {
    }

    private record Step() implements Command {
    }

    /** A request admitted or waiting. */
    private static final class Request {
        final Submit submit;
        final InferenceEngine engine;
        final List<int[]> prompts;
        final long reservedBytes;
        List<Generation> generations;
        /** Per choice: tokens and characters of stable text sent so far, and whether its end was sent. */
        int[] reportedTokens;
        int[] reportedChars;
        boolean[] reportedDone;
        boolean failed;

        Request(Submit submit, InferenceEngine engine, List<int[]> prompts, long reservedBytes) {
            this.submit = submit;
            this.engine = engine;
            this.prompts = prompts;
            this.reservedBytes = reservedBytes;
        }

        int sequences() {
            return prompts.size();
        }
    }

    private record Loaded(Path checkpoint, InferenceEngine engine) {
    }

    private static final Pattern FIELD = Pattern.compile("^([a-z_]+)[: ]");

    private final InferenceLimits limits;
    private final ModelSource models;
    private final InferenceGauges gauges;
    /** Loaded engines by model directory, least recently used first. */
    private final LinkedHashMap<Path, Loaded> engines = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<String, Request> running = new LinkedHashMap<>();
    private final ArrayDeque<Request> queue = new ArrayDeque<>();
    private int activeSequences;
    private long reservedBytes;
    private boolean stepPending;

    public static Behavior<Command> create(InferenceLimits limits, ModelSource models, InferenceGauges gauges) {
        return Behaviors.setup(context -> new InferenceActor(context, limits, models, gauges));
    }

    private InferenceActor(ActorContext<Command> context, InferenceLimits limits, ModelSource models,
                           InferenceGauges gauges) {
        super(context);
        this.limits = limits;
        this.models = models;
        this.gauges = gauges;
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Submit.class, this::onSubmit)
                .onMessage(Cancel.class, this::onCancel)
                .onMessage(Step.class, this::onStep)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    private Behavior<Command> onSubmit(Submit submit) {
        GenerationSink sink = submit.sink();
        if (running.containsKey(submit.requestId()) || queue.stream().anyMatch(r -> r.submit.requestId()
                .equals(submit.requestId()))) {
            sink.invalid("id", "request " + submit.requestId() + " is already in flight");
            return this;
        }
        if (submit.prompts().isEmpty() || submit.prompts().size() > limits.maxPrompts()) {
            sink.invalid("prompt", "a request holds 1 to " + limits.maxPrompts() + " prompts, got "
                    + submit.prompts().size());
            return this;
        }
        if (submit.params().maxTokens() > limits.maxTokens()) {
            sink.invalid("max_tokens", "max_tokens must be <= " + limits.maxTokens() + ", got "
                    + submit.params().maxTokens());
            return this;
        }
        InferenceEngine engine;
        try {
            engine = submit.engine() != null ? submit.engine() : engineFor(submit.model());
        } catch (IOException | RuntimeException e) {
            sink.failed(e);
            return this;
        }
        long bytes = 0;
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < submit.prompts().size(); i++) {
            PromptInput input = submit.prompts().get(i);
            int[] prompt = input.ids() != null ? input.ids() : engine.tokenizer().encode(input.text());
            prompts.add(prompt);
            try {
                engine.checkPrompt(prompt, submit.params().maxTokens());
            } catch (IllegalArgumentException e) {
                String where = submit.prompts().size() > 1 ? " (prompt " + i + ")" : "";
                sink.invalid(fieldOf(e.getMessage()), e.getMessage() + where);
                return this;
            }
            bytes += engine.stateBytesAtMost(prompt.length, submit.params().maxTokens());
        }
        if (bytes > limits.stateBudgetBytes()) {
            sink.invalid("max_tokens", "the request needs " + bytes + " bytes of decoding state at its longest, "
                    + "more than the server's whole budget of " + limits.stateBudgetBytes());
            return this;
        }
        Request request = new Request(submit, engine, prompts, bytes);
        if (queue.isEmpty() && fits(request)) {
            sink.accepted();
            admit(request);
        } else if (queue.size() < limits.queueCapacity()) {
            sink.accepted();
            queue.add(request);
        } else {
            sink.refused("over capacity: " + activeSequences + " sequences running, " + queue.size()
                    + " requests waiting", limits.retryAfterSeconds());
        }
        publishGauges();
        return this;
    }

    private Behavior<Command> onCancel(Cancel cancel) {
        Request request = running.remove(cancel.requestId());
        if (request != null) {
            request.generations.forEach(request.engine::cancel);
            release(request);
        } else {
            queue.removeIf(r -> r.submit.requestId().equals(cancel.requestId()));
        }
        admitWaiting();
        publishGauges();
        return this;
    }

    private Behavior<Command> onStep(Step step) {
        stepPending = false;
        admitWaiting();
        Map<InferenceEngine, List<Generation>> byEngine = new IdentityHashMap<>();
        for (Request request : running.values()) {
            byEngine.computeIfAbsent(request.engine, e -> new ArrayList<>()).addAll(request.generations);
        }
        for (Map.Entry<InferenceEngine, List<Generation>> batch : byEngine.entrySet()) {
            try {
                batch.getKey().step(batch.getValue());
            } catch (RuntimeException e) {
                failAll(batch.getKey(), e);
            }
        }
        for (Iterator<Request> it = running.values().iterator(); it.hasNext(); ) {
            Request request = it.next();
            if (report(request)) {
                it.remove();
                release(request);
            }
        }
        admitWaiting();
        if (!running.isEmpty()) {
            scheduleStep();
        }
        publishGauges();
        return this;
    }

    private Behavior<Command> onPostStop(PostStop stop) {
        for (Request request : running.values()) {
            request.generations.forEach(request.engine::cancel);
            request.submit.sink().failed(new IllegalStateException("the inference actor stopped"));
        }
        for (Request request : queue) {
            request.submit.sink().failed(new IllegalStateException("the inference actor stopped"));
        }
        running.clear();
        queue.clear();
        return this;
    }

    /** Sends the step's news to the request's sink; true when the request is over. */
    private boolean report(Request request) {
        List<GenerationSink.ChoiceDelta> deltas = new ArrayList<>();
        boolean done = true;
        int completionTokens = 0;
        int promptTokens = 0;
        for (int i = 0; i < request.generations.size(); i++) {
            Generation g = request.generations.get(i);
            done &= g.finished();
            completionTokens += g.generatedCount();
            promptTokens += request.prompts.get(i).length;
            if (request.reportedDone[i]) {
                continue;
            }
            String stable = g.stableText();
            int from = request.reportedTokens[i];
            int chars = Math.min(request.reportedChars[i], stable.length());
            if (g.generatedCount() > from || stable.length() > chars || g.finished()) {
                int[] ids = Arrays.copyOfRange(g.tokens(), from, g.generatedCount());
                Sampler.Alternatives[] alternatives = g.alternatives();
                GenerationSink.TopTokens[] top = new GenerationSink.TopTokens[Math.max(0, alternatives.length - from)];
                for (int t = 0; t < top.length; t++) {
                    Sampler.Alternatives a = alternatives[from + t];
                    top[t] = new GenerationSink.TopTokens(a.ids(), tokenTexts(request.engine, a.ids()), a.logprobs());
                }
                deltas.add(new GenerationSink.ChoiceDelta(i, ids, tokenTexts(request.engine, ids),
                        Arrays.copyOfRange(g.logprobs(), from, g.generatedCount()), top, stable.substring(chars),
                        g.finishReason()));
                request.reportedTokens[i] = g.generatedCount();
                request.reportedChars[i] = stable.length();
                request.reportedDone[i] = g.finished();
            }
        }
        try {
            if (!deltas.isEmpty() || done) {
                request.submit.sink().progress(deltas, promptTokens, completionTokens, done);
            }
        } catch (RuntimeException e) {
            getContext().getLog().warn("completion {}: its sink failed, cancelling: {}", request.submit.requestId(),
                    e.toString());
            request.generations.forEach(request.engine::cancel);
            return true;
        }
        return done;
    }

    /** Each id's text alone (empty for ids the tokenizer does not know). */
    private static String[] tokenTexts(InferenceEngine engine, int[] ids) {
        String[] texts = new String[ids.length];
        for (int i = 0; i < ids.length; i++) {
            texts[i] = ids[i] < engine.tokenizer().vocabSize() ? engine.tokenizer().decode(ids, i, 1) : "";
        }
        return texts;
    }

    private void failAll(InferenceEngine engine, RuntimeException e) {
        getContext().getLog().error("inference step failed", e);
        for (Request request : running.values()) {
            if (request.engine == engine) {
                request.generations.forEach(engine::cancel);
                request.submit.sink().failed(e);
                request.failed = true;
            }
        }
        running.values().removeIf(r -> {
            if (r.failed) {
                release(r);
                return true;
            }
            return false;
        });
    }

    private boolean fits(Request request) {
        return activeSequences + request.sequences() <= limits.maxSequences()
                && reservedBytes + request.reservedBytes <= limits.stateBudgetBytes();
    }

    private void admitWaiting() {
        while (!queue.isEmpty() && fits(queue.peek())) {
            admit(queue.poll());
        }
    }

    private void admit(Request request) {
        Submit submit = request.submit;
        List<Generation> generations = new ArrayList<>();
        for (int[] prompt : request.prompts) {
            generations.add(request.engine.start(prompt, submit.params()));
        }
        request.generations = generations;
        request.reportedTokens = new int[generations.size()];
        request.reportedChars = new int[generations.size()];
        request.reportedDone = new boolean[generations.size()];
        running.put(submit.requestId(), request);
        activeSequences += request.sequences();
        reservedBytes += request.reservedBytes;
        scheduleStep();
    }

    private void release(Request request) {
        activeSequences -= request.sequences();
        reservedBytes -= request.reservedBytes;
    }

    private void scheduleStep() {
        if (!stepPending) {
            stepPending = true;
            getContext().getSelf().tell(new Step());
        }
    }

    /** The engine of {@code model}'s newest checkpoint, loaded when new; idle engines beyond the limit are dropped. */
    private InferenceEngine engineFor(Path model) throws IOException {
        Optional<Path> checkpoint = models.latestCheckpoint(model);
        if (checkpoint.isEmpty()) {
            throw new IllegalArgumentException("model: " + model + " has no checkpoint yet");
        }
        Loaded loaded = engines.get(model);
        if (loaded == null || !loaded.checkpoint().equals(checkpoint.get())) {
            loaded = new Loaded(checkpoint.get(), models.load(model, checkpoint.get(), limits));
            engines.put(model, loaded);
            getContext().getLog().info("inference: loaded {} ({})", model, checkpoint.get().getFileName());
        }
        if (engines.size() > limits.maxModels()) {
            for (Iterator<Map.Entry<Path, Loaded>> it = engines.entrySet().iterator();
                 it.hasNext() && engines.size() > limits.maxModels(); ) {
                InferenceEngine candidate = it.next().getValue().engine();
                if (candidate != loaded.engine() && !inUse(candidate)) {
                    it.remove();
                }
            }
        }
        return loaded.engine();
    }

    private boolean inUse(InferenceEngine engine) {
        return running.values().stream().anyMatch(r -> r.engine == engine)
                || queue.stream().anyMatch(r -> r.engine == engine);
    }

    private void publishGauges() {
        long held = 0;
        for (Request request : running.values()) {
            for (Generation g : request.generations) {
                held += g.stateBytes();
            }
        }
        gauges.set(activeSequences, queue.size(), reservedBytes, held, engines.size());
    }

    /** The request field an engine error names ({@code prompt: …}, {@code max_tokens must …}). */
    public static String fieldOf(String message) {
        Matcher m = FIELD.matcher(message == null ? "" : message);
        return m.find() ? m.group(1) : null;
    }
}
