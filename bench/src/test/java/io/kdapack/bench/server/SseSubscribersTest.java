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

    @Test
    void theWarmUpParsesItsOwnStream() {
        SseSubscribers.warmUp(); // throws if the parser rejected the synthetic stream
    }
}
