package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobState;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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

    /** Reads everything written so far: the response head once, then the event text. */
    private static String drain(EmbeddedChannel channel, List<Object> heads) {
        StringBuilder text = new StringBuilder();
        Object message;
        while ((message = channel.readOutbound()) != null) {
            if (message instanceof HttpResponse head) {
                heads.add(head);
            }
            if (message instanceof HttpContent content) {
                ByteBuf bytes = content.content();
                text.append(bytes.toString(StandardCharsets.UTF_8));
                if (content instanceof LastHttpContent) {
                    heads.add(content);
                }
                content.release();
            }
        }
        return text.toString();
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
        EmbeddedChannel channel = new EmbeddedChannel(new EventStreamHandler(log, new SseFrames(), 0));
        List<Object> heads = new ArrayList<>();
        String first = drain(channel, heads);
        assertEquals("text/event-stream; charset=utf-8",
                ((HttpResponse) heads.getFirst()).headers().get("Content-Type"));
        assertEquals("id: 1\nevent: step\ndata: {\"step\":1,\"loss\":10.0,\"mtp_loss\":null,\"tokens\":4096,"
                + "\"segments\":17,\"grad_norm\":1.5,\"lr\":3.0E-4,\"tokens_per_s\":12345.5}\n\n", first);

        log.append(step(2));
        log.end(new EndEvent(JobState.SUCCEEDED, 2, null));
        channel.runPendingTasks();
        String rest = drain(channel, heads);
        assertEquals(List.of(2L), ids(rest));
        assertTrue(rest.contains("\"mtp_loss\":0.25"));
        assertTrue(rest.endsWith("event: end\ndata: {\"state\":\"succeeded\",\"step\":2,\"error\":null}\n\n"), rest);
        assertTrue(heads.getLast() instanceof LastHttpContent, "the response ends after the end event");
        assertFalse(channel.isOpen(), "and the connection closes");
    }

    @Test
    void aLateClientStartsAfterTheStepItNames() {
        JobEventLog log = new JobEventLog(10);
        for (long s = 1; s <= 6; s++) {
            log.append(step(s));
        }
        assertEquals(List.of(4L, 5L, 6L), ids(drain(new EmbeddedChannel(new EventStreamHandler(log, new SseFrames(), 3)), new ArrayList<>())));
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L),
                ids(drain(new EmbeddedChannel(new EventStreamHandler(log, new SseFrames(), 0)), new ArrayList<>())));
        assertEquals(List.of(), ids(drain(new EmbeddedChannel(new EventStreamHandler(log, new SseFrames(), 99)), new ArrayList<>())));
    }

    @Test
    void aStalledClientBuffersAtMostTheHighWaterMarkAndLaterGetsEveryStep() {
        int steps = 2000;
        int highWaterMark = 4096;
        JobEventLog log = new JobEventLog(steps);
        SlowClientChannel channel = new SlowClientChannel();
        channel.config().setWriteBufferWaterMark(new WriteBufferWaterMark(1024, highWaterMark));
        channel.stalled = true;
        channel.pipeline().addLast(new EventStreamHandler(log, new SseFrames(), 0));
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
        List<Object> heads = new ArrayList<>();
        String text = drain(channel, heads);
        List<Long> expected = new ArrayList<>();
        for (long s = 1; s <= steps; s++) {
            expected.add(s);
        }
        assertEquals(expected, ids(text), "every step, in order, none twice");
        assertTrue(text.endsWith("\"error\":null}\n\n"));
        assertTrue(heads.getLast() instanceof LastHttpContent);
    }
}
