package io.kdapack.api.http;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.AbstractScheduledEventExecutor;
import io.netty.util.concurrent.Ticker;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Streams one job run's events as server-sent events: {@code id: <step>}, {@code event: step} with the step's
 * metrics as JSON, and finally {@code event: end}, after which the response ends.
 *
 * <p>The stream reads from the run's {@link JobEventLog} with its own cursor instead of being pushed to:
 * it writes while the channel is writable and resumes from the cursor when it becomes writable again, so a
 * slow client costs one cursor and at most the channel's high-water mark of buffered bytes, and still gets
 * every step. A late or reconnecting client starts after the step it names.
 *
 * <p>The response head goes through the pipeline's HTTP encoder; the body is written as ready-made chunks
 * ({@link SseFrames}), one buffer per event, so the encoder steps aside once the head is out (with 500 streams,
 * the encoder's three buffers and promise per event were a measurable share of the server's CPU).
 *
 * <p>Batching: a stream sends at most once per batch interval (intervals counted on the event loop's clock, the same
 * for every stream). An event that comes after the interval of the last send is over goes out at once (steps slower
 * than the interval see no delay); one that comes sooner waits, with any that follow, until that interval is over,
 * and they go out together in one socket write. A send costs a subscriber about the same CPU whatever it carries
 * (two loopback TCP segments, mostly kernel time), so with hundreds of subscribers and fast steps this divides the
 * streaming cost by the events per batch. Catching up (a late client, or a slow one whose socket drains) is never
 * held back; the end event waits like a step.
 */
public final class EventStreamHandler extends ChannelInboundHandlerAdapter {

    private final JobEventLog log;
    private final SseFrames frames;
    private final long batchNanos;
    private int next;
    private final AtomicBoolean pumpScheduled = new AtomicBoolean();
    /** The event loop's clock (a test's embedded loop can move it). */
    private Ticker ticker = Ticker.systemTicker();
    /** The time on {@link #ticker} before which new events wait: the end of the batch interval of the last send. */
    private volatile long holdUntil;
    private ChannelHandlerContext context;
    private Runnable unsubscribe;
    private boolean ended;

    /**
     * @param frames       the run's encoded events, shared with its other streams
     * @param lastSeenStep the last step the client already has (0 or negative: from the run's first step)
     * @param batch        shortest time between two sends of new events: an event that comes sooner after the
     *                     last send waits, with any that follow, until the interval is over (zero: each at once)
     */
    public EventStreamHandler(JobEventLog log, SseFrames frames, long lastSeenStep, Duration batch) {
        if (batch.isNegative()) {
            throw new IllegalArgumentException("event batch interval must be >= 0, got " + batch);
        }
        this.log = log;
        this.frames = frames;
        this.batchNanos = batch.toNanos();
        this.next = log.indexAfter(lastSeenStep);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        context = ctx;
        if (ctx.executor() instanceof AbstractScheduledEventExecutor loop) {
            ticker = loop.ticker();
        }
        holdUntil = ticker.nanoTime();
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
        head.headers().set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
        head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        HttpUtil.setTransferEncodingChunked(head, true);
        ctx.write(head);
        HttpServerCodec codec = ctx.pipeline().get(HttpServerCodec.class);
        if (codec != null) {
            codec.removeOutboundHandler(); // the chunks below are encoded already
        }
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

    /**
     * Called on the event log's writer thread: hand the work to the channel's event loop, once, at once or when the
     * batch interval since the last send is over.
     */
    private void schedulePump() {
        if (pumpScheduled.compareAndSet(false, true)) {
            Runnable task = () -> {
                pumpScheduled.set(false);
                pump();
            };
            long wait = holdUntil - ticker.nanoTime();
            if (wait > 0) {
                context.executor().schedule(task, wait, TimeUnit.NANOSECONDS);
            } else {
                context.executor().execute(task);
            }
        }
    }

    /** Writes what the client has not seen yet, as far as the channel accepts; runs on the event loop. */
    private void pump() {
        if (ended || !context.channel().isActive()) {
            return;
        }
        boolean wrote = false;
        while (context.channel().isWritable()) {
            EndEvent end = log.end().orElse(null); // read the end before the size: then size is final
            if (next < log.size()) {
                context.write(frames.step(log, next++));
                wrote = true;
            } else if (end != null) {
                ended = true;
                stopListening();
                context.writeAndFlush(frames.end(end)).addListener(ChannelFutureListener.CLOSE);
                return;
            } else {
                break;
            }
        }
        context.flush();
        if (wrote) {
            holdUntil = nextBatchBoundary(ticker.nanoTime());
        }
    }

    /**
     * The first multiple of the batch interval after {@code now} on the event loop's clock: the streams that sent in
     * the same interval wait for the same instant, so that an event loop wakes once for all of its streams, not once
     * for each (waking hundreds of times a second preempts the trainer's threads on a small machine).
     */
    private long nextBatchBoundary(long now) {
        return batchNanos == 0 ? now : Math.floorDiv(now, batchNanos) * batchNanos + batchNanos;
    }

    private void stopListening() {
        if (unsubscribe != null) {
            unsubscribe.run();
            unsubscribe = null;
        }
    }
}
