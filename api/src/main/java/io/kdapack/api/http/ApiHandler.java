package io.kdapack.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.actors.cluster.ClusterView;
import io.kdapack.actors.job.EvaluationTicket;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobOutOfMemory;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.api.server.InferenceService;
import io.kdapack.api.server.JobService;
import io.kdapack.api.server.ServerMetrics;
import io.kdapack.config.ConfigException;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the API's endpoints ({@link Route}) for authenticated, size-checked requests. Work that waits on
 * the job actors completes asynchronously, never on the I/O thread; meanwhile the connection reads no
 * further bytes and requests already decoded wait their turn, so responses keep request order. Any failure
 * becomes a JSON error response and the connection stays usable (a malformed HTTP request closes it).
 */
public final class ApiHandler extends SimpleChannelInboundHandler<FullHttpRequest> {

    private static final Logger LOG = LoggerFactory.getLogger(ApiHandler.class);
    static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private final JobService jobs;
    private final ServerMetrics metrics;
    private final byte[] openApi;
    private final SseFrames.Registry frames;
    private final Duration eventBatch;
    /** Null when the server runs without inference. */
    private final InferenceService inference;
    private final int maxStepTokens;
    private final ChannelGroup eventStreams;
    private final Dashboard dashboard;
    /** Event-loop confined: a request is in progress; later ones on the connection wait in order. */
    private boolean busy;
    private final Queue<FullHttpRequest> waiting = new ArrayDeque<>();

    /** What an endpoint produced: a response to send, or a stream that took over the connection. */
    private sealed interface Outcome permits Reply, Streaming {
    }

    private record Reply(FullHttpResponse response) implements Outcome {
    }

    private record Streaming() implements Outcome {
    }

    /** The parts of a request an endpoint needs once the request buffer has been released. */
    private record Request(Route.Match match, QueryStringDecoder uri, byte[] body, String contentType,
                           String lastEventId) {
    }

    /**
     * @param eventBatch    shortest time between two sends on one event stream ({@link EventStreamHandler})
     * @param maxStepTokens largest {@code POST /v1/steps} batch, B·T tokens
     * @param eventStreams  where connections that stream events are registered (a shutdown waits for them to end)
     * @param dashboard     the browser page and its assets
     */
    public ApiHandler(JobService jobs, ServerMetrics metrics, byte[] openApi, SseFrames.Registry frames,
                      Duration eventBatch, int maxStepTokens, ChannelGroup eventStreams, InferenceService inference,
                      Dashboard dashboard) {
        this.dashboard = dashboard;
        this.inference = inference;
        this.jobs = jobs;
        this.eventStreams = eventStreams;
        this.maxStepTokens = maxStepTokens;
        this.frames = frames;
        this.metrics = metrics;
        this.openApi = openApi;
        this.eventBatch = eventBatch;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
        if (busy) {
            waiting.add(request.retain()); // pipelined behind a request still in progress
            return;
        }
        handle(ctx, request);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        waiting.forEach(FullHttpRequest::release);
        waiting.clear();
    }

    /** Serves one request; its completion (on any thread) comes back to the event loop in {@link #finish}. */
    private void handle(ChannelHandlerContext ctx, FullHttpRequest request) {
        busy = true;
        ctx.channel().config().setAutoRead(false);
        boolean keepAlive = HttpUtil.isKeepAlive(request) && request.decoderResult().isSuccess();
        CompletionStage<Outcome> outcome;
        try {
            if (!request.decoderResult().isSuccess()) {
                throw ApiException.badRequest("malformed HTTP request: " + request.decoderResult().cause().getMessage(),
                        null);
            }
            QueryStringDecoder uri = new QueryStringDecoder(request.uri());
            Route.Match match = Route.match(request.method(), uri.path());
            Request parsed = new Request(match, uri, ByteBufUtil.getBytes(request.content()),
                    request.headers().get(HttpHeaderNames.CONTENT_TYPE), request.headers().get("Last-Event-ID"));
            outcome = serve(ctx, parsed);
        } catch (RuntimeException e) {
            outcome = CompletableFuture.failedFuture(e);
        }
        outcome.whenComplete((result, failure) -> ctx.executor().execute(() -> finish(ctx, result, failure, keepAlive)));
    }

    private void finish(ChannelHandlerContext ctx, Outcome result, Throwable failure, boolean keepAlive) {
        ctx.channel().config().setAutoRead(true);
        if (result instanceof Streaming) {
            return; // the event stream owns the connection now (and reads on, to notice the client leaving)
        }
        Responses.send(ctx, failure == null ? ((Reply) result).response() : errorResponse(failure), keepAlive);
        busy = false;
        FullHttpRequest next = waiting.poll();
        if (next != null) {
            try {
                handle(ctx, next);
            } finally {
                next.release();
            }
        }
    }

    private CompletionStage<Outcome> serve(ChannelHandlerContext ctx, Request request) {
        String id = request.match().jobId();
        if (id != null && !JobManager.JOB_ID.matcher(id).matches()) {
            throw ApiException.badRequest("job id must match " + JobManager.JOB_ID.pattern(), "id");
        }
        return switch (request.match().route()) {
            case HEALTH -> jobs.capacity().thenApply(ApiHandler::health);
            case OPENAPI -> reply(Responses.bytes(HttpResponseStatus.OK, "application/yaml", openApi));
            case METRICS -> jobs.list().thenCombine(jobs.cluster(), (list, cluster) ->
                    new Reply(Responses.text(HttpResponseStatus.OK, PROMETHEUS_TEXT, metrics.scrape(list, cluster))));
            case CLUSTER -> jobs.cluster().thenApply(cluster -> new Reply(Responses.json(HttpResponseStatus.OK,
                    clusterJson(cluster.orElseThrow(() -> ApiException.notFound(
                            "this server is not a cluster member (cluster.enabled is false)"))))));
            case LIST_JOBS -> jobs.list().thenApply(this::jobList);
            case CREATE_JOB -> jobs.create(configDocument(request)).thenApply(status -> {
                FullHttpResponse response = Responses.json(HttpResponseStatus.CREATED, statusJson(status));
                response.headers().set(HttpHeaderNames.LOCATION, "/v1/jobs/" + status.id());
                return new Reply(response);
            });
            case GET_JOB -> jobs.get(id).thenApply(handle -> new Reply(Responses.json(HttpResponseStatus.OK,
                    handleJson(handle.orElseThrow(() -> ApiException.notFound("no job " + id))))));
            case CANCEL_JOB -> purge(request) ? jobs.purge(id).thenApply(status -> new Reply(Responses.json(
                    HttpResponseStatus.OK, purgedJson(id, status.orElse(null)))))
                    : jobs.cancel(id).thenApply(status ->
                            new Reply(Responses.json(HttpResponseStatus.ACCEPTED, statusJson(status))));
            case RESUME_JOB -> jobs.resume(id).thenApply(status ->
                    new Reply(Responses.json(HttpResponseStatus.ACCEPTED, statusJson(status))));
            case JOB_EVENTS -> {
                long lastSeen = lastSeenStep(request);
                yield jobs.get(id).thenApply(handle -> {
                    JobHandle job = handle.orElseThrow(() -> ApiException.notFound("no job " + id));
                    // The stream owns the connection from now on; a further request on it is dropped.
                    ctx.pipeline().replace(this, "events",
                            new EventStreamHandler(job.events(), frames.of(job.events()), lastSeen, eventBatch));
                    eventStreams.add(ctx.channel());
                    return new Streaming();
                });
            }
            case STEPS -> {
                MicroBatch batch;
                String job;
                if (isMediaType(request.contentType(), "application/octet-stream")) {
                    job = request.uri().parameters().getOrDefault("job", List.of()).stream().findFirst()
                            .orElseThrow(() -> ApiException.badRequest("job is required (query parameter)", "job"));
                    batch = StepsRequest.fromSafeTensors(request.body());
                } else {
                    requireJson(request.contentType());
                    StepsRequest steps = StepsRequest.fromJson(request.body());
                    batch = steps.toBatch();
                    job = steps.job();
                }
                if (batch.size() > maxStepTokens) {
                    throw ApiException.badRequest("the batch has " + batch.rows() + " x " + batch.length() + " = "
                            + batch.size() + " tokens, more than server.max_step_tokens (" + maxStepTokens + ")",
                            "tokens");
                }
                // A client that hangs up takes its evaluation with it, if the job has not run it yet.
                EvaluationTicket ticket = jobs.newEvaluationTicket();
                ChannelFutureListener abandon = closed -> ticket.abandon();
                ctx.channel().closeFuture().addListener(abandon);
                yield jobs.evaluate(job, batch, ticket).whenComplete((loss, failure) ->
                                ctx.channel().closeFuture().removeListener(abandon))
                        .thenApply(loss -> new Reply(Responses.json(HttpResponseStatus.OK, lossJson(job, loss))));
            }
            case COMPLETIONS -> {
                requireJson(request.contentType());
                CompletionRequest completion = CompletionRequest.parse(request.body());
                InferenceService service = inference();
                yield service.target(completion.model()).thenApply(target -> {
                    // The completion owns the connection from now on (the response is its last).
                    ctx.pipeline().replace(this, "completion",
                            new CompletionHandler(service.actor(), completion, target));
                    return new Streaming();
                });
            }
            case MODELS -> inference().listing().thenApply(models ->
                    new Reply(Responses.json(HttpResponseStatus.OK, CompletionHandler.modelList(models))));
            case DASHBOARD, DASHBOARD_ASSET -> reply(dashboard.response(request.uri().path()));
        };
    }

    private InferenceService inference() {
        if (inference == null) {
            throw new ApiException(HttpResponseStatus.SERVICE_UNAVAILABLE, "inference is not enabled on this server",
                    null);
        }
        return inference;
    }

    /** 200 {@code ok} while a new job would be accepted, else 503 {@code not ready} with the reason. */
    private static Outcome health(JobManager.Capacity capacity) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", capacity.canTakeWork() ? "ok" : "not ready");
        if (!capacity.canTakeWork()) {
            body.put("reason", capacity.shuttingDown() ? "the server is shutting down"
                    : "every job slot (server.max_running_jobs = " + capacity.admission().maxRunning()
                            + ") and queue place (server.max_queued_jobs = " + capacity.admission().maxQueued()
                            + ") is taken");
        }
        body.put("running_jobs", capacity.running());
        body.put("queued_jobs", capacity.queued());
        return new Reply(Responses.json(capacity.canTakeWork() ? HttpResponseStatus.OK
                : HttpResponseStatus.SERVICE_UNAVAILABLE, body));
    }

    private static CompletionStage<Outcome> reply(FullHttpResponse response) {
        return CompletableFuture.completedFuture(new Reply(response));
    }

    /** {@code ?from=N} (first step wanted) or {@code Last-Event-ID: N} (last step seen); the query wins. */
    private static long lastSeenStep(Request request) {
        List<String> from = request.uri().parameters().get("from");
        if (from != null && !from.isEmpty()) {
            return parseStep(from.getFirst(), "from") - 1;
        }
        return request.lastEventId() == null ? 0 : parseStep(request.lastEventId().trim(), "Last-Event-ID");
    }

    private static long parseStep(String text, String field) {
        try {
            long value = Long.parseLong(text);
            if (value < 0) {
                throw ApiException.badRequest("must be >= 0, got " + value, field);
            }
            return value;
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("must be a step number, got '" + text + "'", field);
        }
    }

    private static JsonNode configDocument(Request request) {
        String type = request.contentType();
        boolean yaml = isMediaType(type, "application/yaml") || isMediaType(type, "application/x-yaml")
                || isMediaType(type, "text/yaml");
        if (!yaml) {
            requireJson(type);
        }
        return StrictJson.readObject(request.body(), yaml);
    }

    private static void requireJson(String contentType) {
        if (contentType != null && !isMediaType(contentType, "application/json")) {
            throw new ApiException(HttpResponseStatus.UNSUPPORTED_MEDIA_TYPE,
                    "unsupported content type '" + contentType + "'", "Content-Type");
        }
    }

    private static boolean isMediaType(String contentType, String mediaType) {
        return contentType != null
                && contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT).equals(mediaType);
    }

    private Reply jobList(List<JobHandle> handles) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("jobs", handles.stream().map(ApiHandler::handleJson).toList());
        // Offered for resume: jobs on disk that are not running or waiting here and did not run out of memory.
        Map<String, JobStatus> known = new LinkedHashMap<>();
        handles.forEach(handle -> known.put(handle.status().id(), handle.status()));
        body.put("resumable", jobs.unfinishedJobs().stream().filter(id -> {
            JobStatus status = known.get(id);
            return status == null || status.state().isResumable() && !JobOutOfMemory.describes(status.error());
        }).toList());
        return new Reply(Responses.json(HttpResponseStatus.OK, body));
    }

    /** {@code ?purge=true} (remove the ended job's files) or {@code false}/absent (cancel); anything else is a 400. */
    private static boolean purge(Request request) {
        List<String> purge = request.uri().parameters().get("purge");
        if (purge == null || purge.isEmpty()) {
            return false;
        }
        return switch (purge.getFirst()) {
            case "true" -> true;
            case "false" -> false;
            default -> throw ApiException.badRequest("must be true or false, got '"
                    + (purge.getFirst().length() > 80 ? purge.getFirst().substring(0, 80) + "…" : purge.getFirst())
                    + "'", "purge");
        };
    }

    /** The answer to a purge: the job's id and its last status (null when only its files were left). */
    private static Map<String, Object> purgedJson(String id, JobStatus last) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", id);
        body.put("purged", true);
        body.put("last_status", last == null ? null : statusJson(last));
        return body;
    }

    /** A job's status and the speed of its last step ({@code last_tokens_per_s}, null before the first). */
    private static Map<String, Object> handleJson(JobHandle handle) {
        Map<String, Object> body = statusJson(handle.status());
        int size = handle.events().size();
        body.put("last_tokens_per_s", size == 0 ? null : handle.events().get(size - 1).tokensPerS());
        return body;
    }

    /** The wire form of a job status. */
    static Map<String, Object> statusJson(JobStatus status) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", status.id());
        body.put("state", status.state().name().toLowerCase(Locale.ROOT));
        body.put("step", status.step());
        body.put("total_steps", status.totalSteps());
        body.put("last_loss", status.lastLoss());
        body.put("started_at", status.startedAt() == null ? null : status.startedAt().toString());
        body.put("finished_at", status.finishedAt() == null ? null : status.finishedAt().toString());
        body.put("error", status.error());
        return body;
    }

    /** The wire form of {@code GET /v1/cluster}. */
    static Map<String, Object> clusterJson(ClusterView cluster) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("self", cluster.self());
        body.put("leader", cluster.leader());
        body.put("members", cluster.members().stream().map(member -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("address", member.address());
            m.put("roles", member.roles());
            m.put("status", member.status());
            m.put("reachable", member.reachable());
            m.put("jobs", member.jobs());
            return m;
        }).toList());
        return body;
    }

    private static Map<String, Object> lossJson(String job, BatchLoss loss) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("job", job);
        body.put("step", loss.weightsStep());
        body.put("last_step", loss.weightsLastStep());
        body.put("loss", loss.total().mean());
        body.put("count", loss.total().count());
        body.put("segments", loss.segments().stream().map(ApiHandler::segmentJson).toList());
        return body;
    }

    private static Map<String, Object> segmentJson(LossReport segment) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("loss", segment.mean());
        body.put("count", segment.count());
        return body;
    }

    private FullHttpResponse errorResponse(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        FullHttpResponse response = Responses.error(switch (cause) {
            case ApiException api -> api;
            case ConfigException config -> ApiException.badRequest(config.getMessage(), config.key());
            case IllegalArgumentException bad -> ApiException.badRequest(bad.getMessage(), null);
            default -> {
                LOG.error("request failed", cause);
                yield new ApiException(HttpResponseStatus.INTERNAL_SERVER_ERROR,
                        "internal error: " + cause.getClass().getSimpleName() + ": " + cause.getMessage(), null);
            }
        });
        if (cause instanceof Route.MethodNotAllowed notAllowed) {
            response.headers().set(HttpHeaderNames.ALLOW, notAllowed.allowed());
        }
        return response;
    }
}
