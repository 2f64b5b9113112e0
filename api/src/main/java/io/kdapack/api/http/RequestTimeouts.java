package io.kdapack.api.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The two clocks of a connection, after the HTTP codec:
 *
 * <ul>
 *   <li><b>idle</b>: while no request is in progress (none being received, none being answered, no event stream), the
 *       next request's head must arrive within the idle timeout, else the connection is closed. This also bounds a
 *       head sent a byte at a time: the codec only passes a head on once it is complete.</li>
 *   <li><b>request</b>: once a head has arrived, the rest of the request (its body) must arrive within the request
 *       timeout, else 408 with a JSON error and the connection is closed.</li>
 * </ul>
 *
 * A request is in progress from its head until its response has been written; an event stream's response never
 * ends, so a streaming connection has no clock (the client sends nothing on it by design). When the server itself
 * holds reads back (a pipelined request waiting behind one in progress), the request clock restarts rather than
 * blame the client. Event-loop confined.
 */
public final class RequestTimeouts extends ChannelDuplexHandler {

    private final long idleNanos;
    private final long requestNanos;
    /** Requests received completely whose responses have not been written yet. */
    private int answering;
    /** A head has arrived, its last content not yet. */
    private boolean receiving;
    private ScheduledFuture<?> timer;
    private ChannelHandlerContext context;

    public RequestTimeouts(Duration idle, Duration request) {
        if (idle.toNanos() <= 0 || request.toNanos() <= 0) {
            throw new IllegalArgumentException("timeouts must be positive, got idle " + idle + " and request " + request);
        }
        this.idleNanos = idle.toNanos();
        this.requestNanos = request.toNanos();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        context = ctx;
        if (ctx.channel().isActive()) {
            armIdle();
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        armIdle();
        ctx.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancel();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        cancel();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object message) {
        if (message instanceof HttpRequest) {
            receiving = true;
            schedule(requestNanos, this::requestTimedOut);
        }
        if (message instanceof LastHttpContent) {
            receiving = false;
            answering++;
            cancel();
        }
        ctx.fireChannelRead(message);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object message, ChannelPromise promise) {
        boolean endsResponse = message instanceof FullHttpResponse full
                ? full.status().codeClass() != HttpStatusClass.INFORMATIONAL
                : message instanceof LastHttpContent && !(message instanceof HttpResponse);
        ctx.write(message, promise);
        if (endsResponse) {
            promise.addListener(done -> responseWritten());
        }
    }

    private void responseWritten() {
        answering = Math.max(0, answering - 1);
        if (answering == 0 && !receiving && context.channel().isActive()) {
            armIdle();
        }
    }

    private void armIdle() {
        schedule(idleNanos, this::idleTimedOut);
    }

    private void idleTimedOut() {
        if (answering == 0 && !receiving && !streaming()) {
            context.close();
        }
    }

    private void requestTimedOut() {
        if (!receiving || streaming()) {
            return;
        }
        if (answering > 0 || !context.channel().config().isAutoRead()) {
            schedule(requestNanos, this::requestTimedOut); // the server holds reads back, not the client
            return;
        }
        FullHttpResponse response = Responses.error(new ApiException(HttpResponseStatus.REQUEST_TIMEOUT,
                "the request did not arrive within " + requestNanos / 1_000_000 + " ms of its head "
                        + "(server.request_timeout_ms)", null));
        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        receiving = false;
        context.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
    }

    private boolean streaming() {
        return context.pipeline().get(EventStreamHandler.class) != null;
    }

    private void schedule(long nanos, Runnable task) {
        cancel();
        timer = context.executor().schedule(task, nanos, TimeUnit.NANOSECONDS);
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }
}
