package io.kdapack.api.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpResponse;
import java.util.function.IntConsumer;

/** Counts every HTTP response leaving the server by status code. */
public final class ResponseMetricsHandler extends ChannelOutboundHandlerAdapter {

    private final IntConsumer countStatus;

    public ResponseMetricsHandler(IntConsumer countStatus) {
        this.countStatus = countStatus;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object message, ChannelPromise promise) {
        if (message instanceof HttpResponse response) {
            countStatus.accept(response.status().code());
        }
        ctx.write(message, promise);
    }
}
