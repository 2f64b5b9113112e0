package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobState;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class EventStreamHandlerTest {

    private static final Pattern ID = Pattern.compile("^id: (\\d+)$", Pattern.MULTILINE);

    private static StepEvent step(long step) {
        return new StepEvent(step, 10.0 / step, step % 2 == 0 ? 0.25 : null, 4096, 17, 1.5, 3e-4, 12345.5);
    }

    /** An embedded channel whose "socket" can stall: while stalled, written bytes stay in the outbound buffer. */
    private static final class SlowClientChannel extends EmbeddedChannel {
        boolean stalled;

        @Override
        protected void doWrite(ChannelOutboundBuffer in) throws Exception {
            if (!stalled) {
                super.doWrite(in);
            }
        }
    }

    /** The client's side of one stream: the server's bytes, as a socket would carry them, through an HTTP decoder. */
    private static final class Client {
        private final EmbeddedChannel decoder = new EmbeddedChannel(new HttpResponseDecoder());
        /** The response head and, once the response is complete, its last content. */
        final List<Object> heads = new ArrayList<>();

        /** Reads everything {@code server} wrote so far; returns the event text of the body decoded from it. */
        String drain(EmbeddedChannel server) {
            ByteBuf written;
            while ((written = server.readOutbound()) != null) {
                decoder.writeInbound(Unpooled.copiedBuffer(written));
                written.release();
            }
            StringBuilder text = new StringBuilder();
            Object message;
            while ((message = decoder.readInbound()) != null) {
                if (message instanceof HttpResponse head) {
                    heads.add(head);
                }
                if (message instanceof HttpContent content) {
                    text.append(content.content().toString(StandardCharsets.UTF_8));
                    if (content instanceof LastHttpContent) {
                        heads.add(content);
                    }
                    content.release();
                }
            }
            return text.toString();
        }
    }

    /** A server channel with the HTTP codec in front of the stream, as in the server's pipeline; no batching. */
    private static EmbeddedChannel stream(JobEventLog log, long lastSeenStep) {
        return new EmbeddedChannel(new HttpServerCodec(),
                new EventStreamHandler(log, new SseFrames(), lastSeenStep, Duration.ZERO));
    }

    private static List<Long> ids(String text) {
        List<Long> ids = new ArrayList<>();
        Matcher matcher = ID.matcher(text);
        while (matcher.find()) {
            ids.add(Long.parseLong(matcher.group(1)));
        }
        return ids;
    }

    @Test
    void streamsStepsWithIdsThenTheEndEventAndCloses() {
        JobEventLog log = new JobEventLog(10);
        log.append(step(1));
        EmbeddedChannel channel = stream(log, 0);
        Client client = new Client();
        String first = client.drain(channel);
        HttpResponse head = (HttpResponse) client.heads.getFirst();
        assertEquals("text/event-stream; charset=utf-8", head.headers().get("Content-Type"));
        assertEquals("chunked", head.headers().get("Transfer-Encoding"));
        assertEquals("id: 1\nevent: step\ndata: {\"step\":1,\"loss\":10.0,\"mtp_loss\":null,\"tokens\":4096,"
                + "\"segments\":17,\"grad_norm\":1.5,\"lr\":3.0E-4,\"tokens_per_s\":12345.5}\n\n", first);

        log.append(step(2));
        log.end(new EndEvent(JobState.SUCCEEDED, 2, null));
        channel.runPendingTasks();
        String rest = client.drain(channel);
        assertEquals(List.of(2L), ids(rest));
        assertTrue(rest.contains("\"mtp_loss\":0.25"));
        assertTrue(rest.endsWith("event: end\ndata: {\"state\":\"succeeded\",\"step\":2,\"error\":null}\n\n"), rest);
        assertTrue(client.heads.getLast() instanceof LastHttpContent, "the response ends after the end event");
        assertFalse(channel.isOpen(), "and the connection closes");
    }

    @Test
    void eventsSoonerThanTheBatchIntervalWaitAndGoOutTogetherOnce() {
        JobEventLog log = new JobEventLog(10);
        EmbeddedChannel channel = new EmbeddedChannel();
        channel.freezeTime();
        AtomicInteger flushes = new AtomicInteger(); // a flush is one socket write of what is pending
        channel.pipeline().addLast(new ChannelOutboundHandlerAdapter() {
            @Override
            public void flush(ChannelHandlerContext ctx) {
                flushes.incrementAndGet();
                ctx.flush();
            }
        }, new HttpServerCodec(), new EventStreamHandler(log, new SseFrames(), 0, Duration.ofSeconds(1)));
        Client client = new Client();
        client.drain(channel); // the response head

        log.append(step(1)); // the stream has sent nothing yet: at once
        channel.runPendingTasks();
        assertEquals(List.of(1L), ids(client.drain(channel)));

        log.append(step(2));
        log.append(step(3));
        channel.runPendingTasks();
        channel.runScheduledPendingTasks();
        assertEquals(List.of(), ids(client.drain(channel)), "within the interval of the last send, events wait");
        channel.advanceTimeBy(1, TimeUnit.SECONDS);
        int before = flushes.get();
        channel.runScheduledPendingTasks();
        assertEquals(before + 1, flushes.get(), "one socket write for the batch");
        assertEquals(List.of(2L, 3L), ids(client.drain(channel)));

        channel.advanceTimeBy(5, TimeUnit.SECONDS); // a step slower than the interval goes out at once
        log.append(step(4));
        channel.runPendingTasks();
        assertEquals(List.of(4L), ids(client.drain(channel)));

        log.end(new EndEvent(JobState.SUCCEEDED, 4, null)); // the end waits like a step
        channel.runPendingTasks();
        assertTrue(channel.isOpen());
        channel.advanceTimeBy(1, TimeUnit.SECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(client.drain(channel).startsWith("event: end\n"));
        assertFalse(channel.isOpen());
    }

    @Test
    void chunksAreSizedInBytesSoTextBeyondAsciiArrivesWhole() {
        JobEventLog log = new JobEventLog(1);
        log.end(new EndEvent(JobState.FAILED, 0, "model stage failed: naïve → ∞ loss"));
        Client client = new Client();
        String text = client.drain(stream(log, 0));
        assertEquals("event: end\ndata: {\"state\":\"failed\",\"step\":0,"
                + "\"error\":\"model stage failed: naïve → ∞ loss\"}\n\n", text);
        assertTrue(client.heads.getLast() instanceof LastHttpContent);
    }

    @Test
    void aLateClientStartsAfterTheStepItNames() {
        JobEventLog log = new JobEventLog(10);
        for (long s = 1; s <= 6; s++) {
            log.append(step(s));
        }
        assertEquals(List.of(4L, 5L, 6L), ids(new Client().drain(stream(log, 3))));
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), ids(new Client().drain(stream(log, 0))));
        assertEquals(List.of(), ids(new Client().drain(stream(log, 99))));
    }

    @Test
    void aStalledClientBuffersAtMostTheHighWaterMarkAndLaterGetsEveryStep() {
        int steps = 2000;
        int highWaterMark = 4096;
        JobEventLog log = new JobEventLog(steps);
        SlowClientChannel channel = new SlowClientChannel();
        channel.config().setWriteBufferWaterMark(new WriteBufferWaterMark(1024, highWaterMark));
        channel.stalled = true;
        channel.pipeline().addLast(new HttpServerCodec(), new EventStreamHandler(log, new SseFrames(), 0, Duration.ZERO));
        for (long s = 1; s <= steps; s++) {
            log.append(step(s));
        }
        log.end(new EndEvent(JobState.SUCCEEDED, steps, null));
        channel.runPendingTasks();

        long buffered = channel.unsafe().outboundBuffer().totalPendingWriteBytes();
        // One event is about 150 bytes: the handler stops writing once the buffer passes the mark.
        assertTrue(buffered <= highWaterMark + 512, "buffered " + buffered + " bytes for a stalled client");
        assertFalse(channel.isWritable());

        channel.stalled = false;
        channel.flush(); // the client reads: the buffer drains, writability returns and the stream resumes
        channel.runPendingTasks();
        Client client = new Client();
        String text = client.drain(channel);
        List<Long> expected = new ArrayList<>();
        for (long s = 1; s <= steps; s++) {
            expected.add(s);
        }
        assertEquals(expected, ids(text), "every step, in order, none twice");
        assertTrue(text.endsWith("\"error\":null}\n\n"));
        assertTrue(client.heads.getLast() instanceof LastHttpContent);
    }
}
