package io.kdapack.api.http;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Streams one job run's events as server-sent events: {@code id: <step>}, {@code event: step} with the step's
 * metrics as JSON, and finally {@code event: end}, after which the response ends.
 *
 * <p>The stream reads from the run's {@link JobEventLog} with its own cursor instead of being pushed to:
 * it writes while the channel is writable and resumes from the cursor when it becomes writable again, so a
 * slow client costs one cursor and at most the channel's high-water mark of buffered bytes, and still gets
 * every step. A late or reconnecting client starts after the step it names.
 */
public final class EventStreamHandler extends ChannelInboundHandlerAdapter {

    private final JobEventLog log;
    private int next;
    private final AtomicBoolean pumpScheduled = new AtomicBoolean();
    private ChannelHandlerContext context;
    private Runnable unsubscribe;
    private boolean ended;

    /** @param lastSeenStep the last step the client already has (0 or negative: from the run's first step) */
    public EventStreamHandler(JobEventLog log, long lastSeenStep) {
        this.log = log;
        this.next = log.indexAfter(lastSeenStep);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        context = ctx;
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
        head.headers().set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
        head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        HttpUtil.setTransferEncodingChunked(head, true);
        ctx.write(head);
        unsubscribe = log.subscribe(this::schedulePump);
        pump();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            pump();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        stopListening();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        stopListening();
    }

    /** Called on the event log's writer thread: hand the work to the channel's event loop, once. */
    private void schedulePump() {
        if (pumpScheduled.compareAndSet(false, true)) {
            context.executor().execute(() -> {
                pumpScheduled.set(false);
                pump();
            });
        }
    }

    /** Writes what the client has not seen yet, as far as the channel accepts; runs on the event loop. */
    private void pump() {
        if (ended || !context.channel().isActive()) {
            return;
        }
        while (context.channel().isWritable()) {
            EndEvent end = log.end().orElse(null); // read the end before the size: then size is final
            if (next < log.size()) {
                StepEvent step = log.get(next++);
                context.write(chunk("id: " + step.step() + "\nevent: step\ndata: " + stepJson(step) + "\n\n"));
            } else if (end != null) {
                ended = true;
                stopListening();
                context.write(chunk("event: end\ndata: " + endJson(end) + "\n\n"));
                context.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(ChannelFutureListener.CLOSE);
                return;
            } else {
                break;
            }
        }
        context.flush();
    }

    private void stopListening() {
        if (unsubscribe != null) {
            unsubscribe.run();
            unsubscribe = null;
        }
    }

    private static DefaultHttpContent chunk(String text) {
        ByteBuf bytes = Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
        return new DefaultHttpContent(bytes);
    }

    /** The wire form of a step event (DESIGN §5 field names). */
    static String stepJson(StepEvent step) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("step", step.step());
        fields.put("loss", step.loss());
        fields.put("mtp_loss", step.mtpLoss());
        fields.put("tokens", step.tokens());
        fields.put("segments", step.segments());
        fields.put("grad_norm", step.gradNorm());
        fields.put("lr", step.lr());
        fields.put("tokens_per_s", step.tokensPerS());
        return new String(Json.write(fields), StandardCharsets.UTF_8);
    }

    static String endJson(EndEvent end) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("state", end.state().name().toLowerCase());
        fields.put("step", end.step());
        fields.put("error", end.error());
        return new String(Json.write(fields), StandardCharsets.UTF_8);
    }
}
