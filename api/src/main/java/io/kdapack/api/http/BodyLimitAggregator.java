package io.kdapack.api.http;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * Aggregates a request into one {@code FullHttpRequest} of at most {@code maxBodyBytes}; a larger one is
 * answered 413 with a JSON error and the connection closed (its remaining bytes are never read).
 */
public final class BodyLimitAggregator extends HttpObjectAggregator {

    private final int maxBodyBytes;

    public BodyLimitAggregator(int maxBodyBytes) {
        super(maxBodyBytes);
        this.maxBodyBytes = maxBodyBytes;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        FullHttpResponse response = Responses.error(new ApiException(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                "request body larger than " + maxBodyBytes + " bytes", null));
        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
    }
}
