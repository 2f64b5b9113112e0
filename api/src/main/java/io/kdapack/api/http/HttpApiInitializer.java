package io.kdapack.api.http;

import io.kdapack.api.server.InferenceService;
import io.kdapack.api.server.JobService;
import io.kdapack.api.server.ServerLimits;
import io.kdapack.api.server.ServerMetrics;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.time.Duration;

/**
 * Builds each connection's pipeline: connection caps, HTTP codec, idle and request clocks, response metrics, auth on
 * the request head, body limit (aggregation), then the API. Auth comes before the aggregator so that no body byte of
 * an unauthenticated request is ever buffered.
 */
public final class HttpApiInitializer extends ChannelInitializer<Channel> {

    private final JobService jobs;
    private final ServerMetrics metrics;
    private final String token;
    private final int maxBodyBytes;
    private final byte[] openApi;
    private final Duration eventBatch;
    private final SseFrames.Registry frames = new SseFrames.Registry();
    private final InferenceService inference;
    private final ServerLimits limits;
    private final ConnectionLimiter connections;
    private final Dashboard dashboard = Dashboard.fromClasspath();
    /** Connections streaming events; a closed one leaves the group by itself. */
    private final ChannelGroup eventStreams = new DefaultChannelGroup("event-streams", GlobalEventExecutor.INSTANCE);

    /** With the default {@link ServerLimits}. */
    public HttpApiInitializer(JobService jobs, ServerMetrics metrics, String token, int maxBodyBytes, byte[] openApi,
                              Duration eventBatch) {
        this(jobs, metrics, token, maxBodyBytes, openApi, eventBatch, ServerLimits.defaults(), null);
    }

    /**
     * @param eventBatch shortest time between two sends on one event stream ({@link EventStreamHandler})
     * @param limits     connection caps, timeouts and the {@code /v1/steps} token limit
     * @param inference  the completions service, or null for a server without inference
     */
    public HttpApiInitializer(JobService jobs, ServerMetrics metrics, String token, int maxBodyBytes, byte[] openApi,
                              Duration eventBatch, ServerLimits limits, InferenceService inference) {
        this.inference = inference;
        this.jobs = jobs;
        this.metrics = metrics;
        this.token = token;
        this.maxBodyBytes = maxBodyBytes;
        this.openApi = openApi;
        this.eventBatch = eventBatch;
        this.limits = limits;
        this.connections = new ConnectionLimiter(limits.maxConnections(), limits.maxConnectionsPerAddress());
    }

    /**
     * Waits, at most {@code within}, until every event stream has ended (each closes after writing its run's end event),
     * so that a shutdown delivers the events that were pending; true if all did.
     */
    public boolean awaitEventStreamsEnded(Duration within) throws InterruptedException {
        return eventStreams.newCloseFuture().await(within.toMillis());
    }

    /** The connection caps shared by every connection (open and refused counts). */
    public ConnectionLimiter connections() {
        return connections;
    }

    @Override
    protected void initChannel(Channel channel) {
        ChannelPipeline pipeline = channel.pipeline();
        pipeline.addLast("connections", connections);
        pipeline.addLast("codec", new HttpServerCodec());
        pipeline.addLast("timeouts", new RequestTimeouts(limits.idleTimeout(), limits.requestTimeout()));
        pipeline.addLast("response-metrics", new ResponseMetricsHandler(metrics::countResponse));
        pipeline.addLast("auth", new BearerAuthHandler(token));
        pipeline.addLast("body-limit", new BodyLimitAggregator(maxBodyBytes));
        pipeline.addLast("api", new ApiHandler(jobs, metrics, openApi, frames, eventBatch, limits.maxStepTokens(),
                eventStreams, inference, dashboard));
    }
}
