package io.kdapack.api.http;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * Aggregates a request into one {@code FullHttpRequest} of at most {@code maxBodyBytes}; a larger one is
 * answered 413 with a JSON error and the connection closed (its remaining bytes are never read). A declared
 * {@code Content-Length} over the limit is refused from the head, before any byte of the body, and so is an
 * {@code Expect: 100-continue} for one (413 with the same JSON error instead of {@code 100 Continue}); a chunked
 * body is counted as it arrives and refused when it passes the limit, so at most {@code maxBodyBytes} are held.
 */
public final class BodyLimitAggregator extends HttpObjectAggregator {

    private final int maxBodyBytes;

    public BodyLimitAggregator(int maxBodyBytes) {
        super(maxBodyBytes, true);
        this.maxBodyBytes = maxBodyBytes;
    }

    @Override
    protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
        Object answer = super.newContinueResponse(start, maxContentLength, pipeline);
        if (answer instanceof FullHttpResponse refusal
                && refusal.status().code() == HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE.code()) {
            refusal.release();
            return tooLarge();
        }
        return answer;
    }

    private FullHttpResponse tooLarge() {
        FullHttpResponse response = Responses.error(new ApiException(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                "request body larger than " + maxBodyBytes + " bytes (server.max_body_bytes)", null));
        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        return response;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        ctx.writeAndFlush(tooLarge()).addListener(ChannelFutureListener.CLOSE);
    }
}
