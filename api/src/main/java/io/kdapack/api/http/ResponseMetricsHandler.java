package io.kdapack.api.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import java.util.function.IntConsumer;

/** Counts every HTTP response leaving the server by status code; interim ones ({@code 100 Continue}) are not responses. */
public final class ResponseMetricsHandler extends ChannelOutboundHandlerAdapter {

    private final IntConsumer countStatus;

    public ResponseMetricsHandler(IntConsumer countStatus) {
        this.countStatus = countStatus;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object message, ChannelPromise promise) {
        if (message instanceof HttpResponse response && response.status().codeClass() != HttpStatusClass.INFORMATIONAL) {
            countStatus.accept(response.status().code());
        }
        ctx.write(message, promise);
    }
}
