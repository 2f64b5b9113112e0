package io.kdapack.api.http;

import io.kdapack.actors.inference.GenerationSink;
import io.kdapack.actors.inference.InferenceActor;
import io.kdapack.api.server.InferenceService;
import io.kdapack.inference.FinishReason;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Answers one {@code POST /v1/completions} on its connection, which it owns from the moment it is added (the
 * response is the last on the connection, which then closes). It submits the request to the inference actor and
 * turns the actor's reports, handed to the connection's event loop, into the response: a refusal is 429 with
 * {@code Retry-After}, a bad request 400 naming the field; then either one JSON body (OpenAI {@code text_completion})
 * or, with {@code stream}, server-sent events ({@code data: <chunk>} per step with news, {@code data: [DONE]} last).
 * A client that goes away cancels its request, which frees its sequences at the actor's next message.
 *
 * <p>Memory: the tokens of a response wait in this handler (non-streamed) or in the channel's outbound buffer (a
 * slow streaming client); both are bounded by the request's {@code max_tokens} (itself bounded by the server).
 */
public final class CompletionHandler extends ChannelInboundHandlerAdapter {
    private static final AtomicLong IDS = new AtomicLong();
    /** Header (and body field {@code weights_step}) naming the optimizer step of the live weights that answered. */
    public static final String WEIGHTS_STEP_HEADER = "X-Kdapack-Weights-Step";

    private final ActorRef<InferenceActor.Command> inference;
    private final CompletionRequest request;
    private final InferenceService.Target target;
    private final String id;
    private final long created;
    private final List<Choice> choices = new ArrayList<>();
    private ChannelHandlerContext context;
    private boolean headSent;
    private boolean finished;
    private int promptTokens;
    private int completionTokens;

    /** What a non-streamed response collects per choice. */
    private static final class Choice {
        final StringBuilder text = new StringBuilder();
        final List<Integer> ids = new ArrayList<>();
        final List<String> tokens = new ArrayList<>();
        final List<Double> logprobs = new ArrayList<>();
        final List<GenerationSink.TopTokens> alternatives = new ArrayList<>();
        FinishReason finish;
    }

    /** @param target what {@code request.model()} is served from ({@link InferenceService#target}) */
    public CompletionHandler(ActorRef<InferenceActor.Command> inference, CompletionRequest request,
                             InferenceService.Target target) {
        this.inference = inference;
        this.request = request;
        this.target = target;
        this.id = "cmpl-" + IDS.incrementAndGet() + "-" + Long.toHexString(System.nanoTime());
        this.created = System.currentTimeMillis() / 1000;
        for (int i = 0; i < request.prompts().size(); i++) {
            choices.add(new Choice());
        }
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        context = ctx;
        inference.tell(new InferenceActor.Submit(id, target.directory(), target.engine(), request.prompts(),
                request.params(), new Sink()));
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        io.netty.util.ReferenceCountUtil.release(msg); // the connection carries this one request only
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (!finished) {
            finished = true;
            inference.tell(new InferenceActor.Cancel(id));
        }
        ctx.fireChannelInactive();
    }

    /** The actor's reports, each moved to the event loop. */
    private final class Sink implements GenerationSink {
        @Override
        public void accepted() {
            if (request.stream()) {
                context.executor().execute(CompletionHandler.this::sendHead);
            }
        }

        @Override
        public void refused(String reason, int retryAfterSeconds) {
            context.executor().execute(() -> {
                FullHttpResponse response = Responses.error(new ApiException(HttpResponseStatus.TOO_MANY_REQUESTS,
                        reason, null));
                response.headers().set(HttpHeaderNames.RETRY_AFTER, retryAfterSeconds);
                end(response);
            });
        }

        @Override
        public void invalid(String field, String message) {
            context.executor().execute(() -> end(Responses.error(ApiException.badRequest(message, field))));
        }

        @Override
        public void failed(Exception cause) {
            context.executor().execute(() -> fail(cause));
        }

        @Override
        public void progress(List<ChoiceDelta> deltas, int prompt, int completion, boolean done) {
            context.executor().execute(() -> onProgress(deltas, prompt, completion, done));
        }
    }

    private void sendHead() {
        if (finished || headSent) {
            return;
        }
        headSent = true;
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
        head.headers().set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
        head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        markWeightsStep(head);
        HttpUtil.setTransferEncodingChunked(head, true);
        context.writeAndFlush(head);
    }

    private void onProgress(List<GenerationSink.ChoiceDelta> deltas, int prompt, int completion, boolean done) {
        if (finished) {
            return;
        }
        promptTokens = prompt;
        completionTokens = completion;
        if (request.stream()) {
            sendHead();
            if (!deltas.isEmpty()) {
                List<Object> chunkChoices = new ArrayList<>();
                for (GenerationSink.ChoiceDelta d : deltas) {
                    chunkChoices.add(choiceJson(d.index(), d.text(), toList(d.tokenIds()), List.of(d.tokenTexts()),
                            toList(d.logprobs()), List.of(d.alternatives()), d.finishReason()));
                }
                writeEvent(StrictJson.write(body(chunkChoices, null)));
            }
            if (done) {
                writeEvent("[DONE]".getBytes(StandardCharsets.UTF_8));
                finished = true;
                context.writeAndFlush(new DefaultLastHttpContent()).addListener(ChannelFutureListener.CLOSE);
            } else {
                context.flush();
            }
            return;
        }
        for (GenerationSink.ChoiceDelta d : deltas) {
            Choice choice = choices.get(d.index());
            choice.text.append(d.text());
            for (int i = 0; i < d.tokenIds().length; i++) {
                choice.ids.add(d.tokenIds()[i]);
                choice.tokens.add(d.tokenTexts()[i]);
                choice.logprobs.add(d.logprobs()[i]);
            }
            choice.alternatives.addAll(List.of(d.alternatives()));
            if (d.finishReason() != null) {
                choice.finish = d.finishReason();
            }
        }
        if (done) {
            List<Object> all = new ArrayList<>();
            for (int i = 0; i < choices.size(); i++) {
                Choice c = choices.get(i);
                all.add(choiceJson(i, c.text.toString(), c.ids, c.tokens, c.logprobs, c.alternatives, c.finish));
            }
            Map<String, Object> usage = new LinkedHashMap<>();
            usage.put("prompt_tokens", promptTokens);
            usage.put("completion_tokens", completionTokens);
            usage.put("total_tokens", promptTokens + completionTokens);
            FullHttpResponse response = Responses.json(HttpResponseStatus.OK, body(all, usage));
            markWeightsStep(response);
            end(response);
        }
    }

    private Map<String, Object> body(List<Object> choiceList, Map<String, Object> usage) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", id);
        body.put("object", "text_completion");
        body.put("created", created);
        body.put("model", request.model());
        if (target.engine() != null) {
            body.put("weights_step", target.weightsStep());
        }
        body.put("choices", choiceList);
        if (usage != null) {
            body.put("usage", usage);
        }
        return body;
    }

    /**
     * One choice in OpenAI's shape. With {@code logprobs} N &gt; 0, {@code top_logprobs} holds per token a map of the N
     * most likely tokens' texts to their log-probabilities, most likely first; two ids with the same text alone
     * (bytes of an unfinished UTF-8 character decode to U+FFFD) share one key, which keeps the more likely one, so the
     * exact list is also given by id ({@code top_token_ids}, {@code top_token_logprobs}: kdapack's extension).
     */
    private Map<String, Object> choiceJson(int index, String text, List<Integer> ids, List<String> tokens,
                                           List<Double> logprobs, List<GenerationSink.TopTokens> alternatives,
                                           FinishReason finish) {
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", index);
        choice.put("text", text);
        choice.put("token_ids", ids);
        if (request.logprobs()) {
            Map<String, Object> lp = new LinkedHashMap<>();
            lp.put("tokens", tokens);
            lp.put("token_logprobs", logprobs);
            if (request.params().topLogprobs() == 0) {
                lp.put("top_logprobs", null);
            } else {
                List<Map<String, Double>> byText = new ArrayList<>();
                List<List<Integer>> topIds = new ArrayList<>();
                List<List<Double>> topLogprobs = new ArrayList<>();
                for (GenerationSink.TopTokens a : alternatives) {
                    Map<String, Double> entry = new LinkedHashMap<>();
                    for (int i = 0; i < a.ids().length; i++) {
                        entry.putIfAbsent(a.texts()[i], a.logprobs()[i]);
                    }
                    byText.add(entry);
                    topIds.add(toList(a.ids()));
                    topLogprobs.add(toList(a.logprobs()));
                }
                lp.put("top_logprobs", byText);
                lp.put("top_token_ids", topIds);
                lp.put("top_token_logprobs", topLogprobs);
            }
            choice.put("logprobs", lp);
        } else {
            choice.put("logprobs", null);
        }
        choice.put("finish_reason", finish == null ? null : finish.wireName());
        return choice;
    }

    /** A response served from a running job's live weights names their optimizer step. */
    private void markWeightsStep(HttpResponse response) {
        if (target.engine() != null) {
            response.headers().set(WEIGHTS_STEP_HEADER, target.weightsStep());
        }
    }

    private void writeEvent(byte[] data) {
        byte[] prefix = "data: ".getBytes(StandardCharsets.US_ASCII);
        byte[] frame = new byte[prefix.length + data.length + 2];
        System.arraycopy(prefix, 0, frame, 0, prefix.length);
        System.arraycopy(data, 0, frame, prefix.length, data.length);
        frame[frame.length - 2] = '\n';
        frame[frame.length - 1] = '\n';
        context.write(new DefaultHttpContent(Unpooled.wrappedBuffer(frame)));
    }

    private void fail(Exception cause) {
        if (finished) {
            return;
        }
        ApiException error = cause instanceof IllegalArgumentException bad
                ? ApiException.badRequest(bad.getMessage(), CompletionRequest.fieldOf(bad.getMessage()))
                : new ApiException(HttpResponseStatus.INTERNAL_SERVER_ERROR, "inference failed: " + cause, null);
        if (!headSent) {
            end(Responses.error(error));
            return;
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", error.getMessage());
        writeEvent(StrictJson.write(body));
        finished = true;
        context.writeAndFlush(new DefaultLastHttpContent()).addListener(ChannelFutureListener.CLOSE);
    }

    /** Sends a whole response and closes the connection. */
    private void end(FullHttpResponse response) {
        if (finished) {
            response.release();
            return;
        }
        finished = true;
        Responses.send(context, response, false);
    }

    /**
     * The body of {@code GET /v1/models} (OpenAI's list shape, plus each model's newest checkpoint step, and for a
     * running job {@code live: true} and the step of its live weights).
     */
    static Map<String, Object> modelList(List<InferenceService.ModelEntry> entries) {
        List<Object> data = new ArrayList<>();
        for (InferenceService.ModelEntry entry : entries) {
            Map<String, Object> model = new LinkedHashMap<>();
            model.put("id", entry.id());
            model.put("object", "model");
            model.put("owned_by", "kdapack");
            model.put("checkpoint_step", entry.step() < 0 ? null : entry.step());
            model.put("live", entry.liveStep() >= 0);
            if (entry.liveStep() >= 0) {
                model.put("weights_step", entry.liveStep());
            }
            data.add(model);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("object", "list");
        body.put("data", data);
        return body;
    }

    private static List<Integer> toList(int[] values) {
        List<Integer> out = new ArrayList<>(values.length);
        for (int v : values) {
            out.add(v);
        }
        return out;
    }

    private static List<Double> toList(double[] values) {
        List<Double> out = new ArrayList<>(values.length);
        for (double v : values) {
            out.add(v);
        }
        return out;
    }
}
