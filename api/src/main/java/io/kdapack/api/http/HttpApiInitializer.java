package io.kdapack.api.http;

import io.kdapack.api.server.InferenceService;
import io.kdapack.api.server.JobService;
import io.kdapack.api.server.ServerMetrics;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpServerCodec;
import java.time.Duration;

/** Builds each connection's pipeline: HTTP codec, response metrics, body limit, auth, then the API. */
public final class HttpApiInitializer extends ChannelInitializer<Channel> {

    private final JobService jobs;
    private final ServerMetrics metrics;
    private final String token;
    private final int maxBodyBytes;
    private final byte[] openApi;
    private final Duration eventBatch;
    private final SseFrames.Registry frames = new SseFrames.Registry();
    private final InferenceService inference;

    /** @param eventBatch shortest time between two sends on one event stream ({@link EventStreamHandler}) */
    public HttpApiInitializer(JobService jobs, ServerMetrics metrics, String token, int maxBodyBytes, byte[] openApi,
                              Duration eventBatch) {
        this(jobs, metrics, token, maxBodyBytes, openApi, eventBatch, null);
    }

    /** @param inference the completions service, or null for a server without inference */
    public HttpApiInitializer(JobService jobs, ServerMetrics metrics, String token, int maxBodyBytes, byte[] openApi,
                              Duration eventBatch, InferenceService inference) {
        this.inference = inference;
        this.jobs = jobs;
        this.metrics = metrics;
        this.token = token;
        this.maxBodyBytes = maxBodyBytes;
        this.openApi = openApi;
        this.eventBatch = eventBatch;
    }

    @Override
    protected void initChannel(Channel channel) {
        ChannelPipeline pipeline = channel.pipeline();
        pipeline.addLast("codec", new HttpServerCodec());
        pipeline.addLast("response-metrics", new ResponseMetricsHandler(metrics::countResponse));
        pipeline.addLast("body-limit", new BodyLimitAggregator(maxBodyBytes));
        pipeline.addLast("auth", new BearerAuthHandler(token));
        pipeline.addLast("api", new ApiHandler(jobs, metrics, openApi, frames, eventBatch, inference));
    }
}
