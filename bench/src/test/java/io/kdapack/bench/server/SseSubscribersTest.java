package io.kdapack.bench.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The subscribers' checks, against a canned server: a complete stream passes, a gap or a missing end does not. */
class SseSubscribersTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    /** Serves {@code count} connections with the chunked event stream of {@code events}, then closes each. */
    private static List<SseSubscribers.Stream> receive(int count, String events) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread serving = Thread.ofVirtual().start(() -> {
                for (int i = 0; i < count; i++) {
                    try (Socket socket = server.accept(); OutputStream out = socket.getOutputStream()) {
                        byte[] body = events.getBytes(StandardCharsets.UTF_8);
                        out.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                                + Integer.toHexString(body.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                        out.write(body);
                        out.write("\r\n0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
            try (SseSubscribers subscribers = SseSubscribers.connect(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()), "token", "j1", count,
                    Duration.ZERO)) {
                List<SseSubscribers.Stream> streams = subscribers.awaitEnd(WAIT);
                serving.join();
                return streams;
            }
        }
    }

    private static String step(long id) {
        return "id: " + id + "\nevent: step\ndata: {\"step\":" + id + "}\n\n";
    }

    @Test
    void everyStepThenTheEndIsComplete() throws Exception {
        List<SseSubscribers.Stream> streams = receive(3, step(1) + step(2) + step(3) + "event: end\ndata: {}\n\n");
        assertEquals(3, streams.size());
        for (SseSubscribers.Stream stream : streams) {
            assertTrue(stream.complete(3), stream.toString());
            assertFalse(stream.complete(4), "one step short of 4");
        }
        assertEquals(1, streams.stream().mapToLong(SseSubscribers.Stream::crc).distinct().count());
    }

    @Test
    void aMissingStepOrAMissingEndIsNotComplete() throws Exception {
        SseSubscribers.Stream gap = receive(1, step(1) + step(3) + "event: end\ndata: {}\n\n").getFirst();
        assertFalse(gap.complete(2));
        assertNotNull(gap.failure());
        assertTrue(gap.failure().contains("step 3 after step 1"), gap.failure());

        SseSubscribers.Stream cut = receive(1, step(1) + step(2)).getFirst();
        assertFalse(cut.complete(2));
        assertEquals("connection closed before the end event", cut.failure());
    }

    /**
     * The warm-up's synthetic stream (one HTTP chunk per event) parses to its 100 steps, and to what the same events
     * give the subscribers when a server sends them in one chunk and closes: the same ids, count and CRC.
     */
    @Test
    void theWarmUpParsesItsOwnStream() throws Exception {
        SseSubscribers.Stream warm = SseSubscribers.warmUp();
        assertEquals(1, warm.firstId());
        assertEquals(100, warm.lastId());
        assertEquals(100, warm.steps());
        assertFalse(warm.ended(), "the warm-up stream has no end event");
        assertEquals(null, warm.failure());

        StringBuilder events = new StringBuilder();
        for (int step = 1; step <= 100; step++) {
            events.append("id: ").append(step).append("\nevent: step\ndata: {\"step\":").append(step)
                    .append(",\"loss\":1.0}\n\n");
        }
        SseSubscribers.Stream served = receive(1, events.toString()).getFirst();
        assertEquals("connection closed before the end event", served.failure());
        assertEquals(served.steps(), warm.steps());
        assertEquals(served.lastId(), warm.lastId());
        assertEquals(served.crc(), warm.crc(), "the same id, event and data lines, whatever the chunking");
    }
}
