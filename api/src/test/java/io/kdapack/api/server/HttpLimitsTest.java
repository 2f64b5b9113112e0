package io.kdapack.api.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.training.pipeline.PipelineSettings;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the server refuses before it does any work, over raw loopback sockets: unauthenticated bodies, oversized bodies
 * announced with {@code Expect: 100-continue}, connections over the caps, idle and slow clients, huge error values.
 */
class HttpLimitsTest {

    private static final String TOKEN = "limits-test-token-0123456789";
    private static final int MAX_BODY = 64 * 1024;
    /** Longest any single read here may block: every answer below is expected within a fraction of it. */
    private static final int READ_TIMEOUT_MS = 10_000;

    @TempDir
    Path temp;
    private KdapackServer server;
    private final List<Socket> sockets = new ArrayList<>();

    private int start(ServerLimits limits) throws Exception {
        ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, temp.resolve("token"), MAX_BODY, temp,
                Duration.ZERO, Duration.ofSeconds(10), 16,
                new PipelineSettings(2, Duration.ofSeconds(60), Duration.ofSeconds(60), Duration.ofSeconds(10)), limits);
        server = KdapackServer.start(settings, TOKEN, new ScriptedJobFactory());
        return server.address().getPort();
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket socket : sockets) {
            socket.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private Socket connect(int port) throws IOException {
        Socket socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(READ_TIMEOUT_MS);
        sockets.add(socket);
        return socket;
    }

    /** Everything the server sends until it closes the connection (or the read times out: an AssertionError). */
    private static String readToClose(Socket socket) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InputStream in = socket.getInputStream();
        byte[] buffer = new byte[8192];
        try {
            for (int n; (n = in.read(buffer)) != -1; ) {
                out.write(buffer, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server did not close the connection; got so far: " + out, e);
        } catch (IOException reset) {
            // a reset after the response: the server closed with unread bytes of ours
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** One response of a kept-alive connection: its head and {@code Content-Length} bytes of body. */
    private static String readResponse(Socket socket) throws IOException {
        InputStream in = socket.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new AssertionError("connection closed inside a response head: " + head);
            }
            head.append((char) b);
        }
        java.util.regex.Matcher length = java.util.regex.Pattern.compile("(?i)content-length: (\\d+)").matcher(head);
        int body = length.find() ? Integer.parseInt(length.group(1)) : 0;
        return head + new String(in.readNBytes(body), StandardCharsets.UTF_8);
    }

    private static void send(Socket socket, String text) throws IOException {
        socket.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
        socket.getOutputStream().flush();
    }

    @Test
    void anUnauthenticatedBodyIsRefusedFromItsHeadWithoutReadingIt() throws Exception {
        int port = start(ServerLimits.defaults());
        Socket socket = connect(port);
        // 15 MiB announced, none sent: the 401 must come from the head alone.
        send(socket, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 15728641\r\n\r\n");
        String answer = readToClose(socket);
        assertTrue(answer.startsWith("HTTP/1.1 401"), answer);
        assertTrue(answer.contains("missing bearer token"), answer);

        Socket expecting = connect(port);
        send(expecting, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
                + "Expect: 100-continue\r\nContent-Length: 100\r\n\r\n");
        String refused = readToClose(expecting);
        assertTrue(refused.startsWith("HTTP/1.1 401"), "no 100 Continue for a refused request: " + refused);
    }

    @Test
    void anOversizedBodyWithExpectContinueGets413WithItsJsonErrorAndInterimResponsesAreNotCounted() throws Exception {
        int port = start(ServerLimits.defaults());
        Socket socket = connect(port);
        send(socket, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n"
                + "Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: " + (MAX_BODY + 1)
                + "\r\n\r\n");
        String answer = readToClose(socket);
        assertTrue(answer.startsWith("HTTP/1.1 413"), answer);
        assertTrue(answer.contains("\"error\":\"request body larger than " + MAX_BODY + " bytes"), answer);

        Socket small = connect(port);
        send(small, "POST /v1/steps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n"
                + "Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
        byte[] interim = small.getInputStream().readNBytes("HTTP/1.1 100 Continue\r\n\r\n".length());
        assertEquals("HTTP/1.1 100 Continue\r\n\r\n", new String(interim, StandardCharsets.US_ASCII));
        send(small, "{}");
        assertTrue(readToClose(small).startsWith("HTTP/1.1 400"));

        Socket metrics = connect(port);
        send(metrics, "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\nConnection: close\r\n\r\n");
        String scrape = readToClose(metrics);
        assertTrue(scrape.contains("status=\"413\"") && scrape.contains("status=\"400\""), scrape);
        assertFalse(scrape.contains("status=\"100\""), "interim 100 Continue is not a response: " + scrape);
    }

    @Test
    void connectionsOverTheCapPerAddressAreClosedAtOnceAndTheOthersServe() throws Exception {
        int port = start(ServerLimits.defaults().withConnections(100, 3));
        List<Socket> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Socket socket = connect(port);
            // Served once, so that the server has counted it before the next one connects.
            send(socket, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
            assertTrue(readResponse(socket).startsWith("HTTP/1.1 200"));
            held.add(socket);
        }
        Socket over = connect(port);
        assertEquals("", readToClose(over), "the fourth connection from one address is closed without an answer");
        send(held.getFirst(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertTrue(readToClose(held.getFirst()).startsWith("HTTP/1.1 200"), "connections within the cap serve");
        // Closed ones free their place (as soon as the server has seen the close: a bounded retry).
        String answer = "";
        for (int attempt = 0; attempt < 50 && answer.isEmpty(); attempt++) {
            Thread.sleep(20);
            Socket again = connect(port);
            send(again, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            answer = readToClose(again);
        }
        assertTrue(answer.startsWith("HTTP/1.1 200"), answer);
    }

    @Test
    void idleConnectionsAreClosedAndSlowBodiesGet408() throws Exception {
        int port = start(ServerLimits.defaults().withTimeouts(Duration.ofMillis(300), Duration.ofMillis(500)));
        long before = System.nanoTime();
        assertEquals("", readToClose(connect(port)), "an idle connection is closed without an answer");
        assertTrue(System.nanoTime() - before >= 250_000_000L, "not before its idle timeout");

        Socket slow = connect(port);
        send(slow, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n"
                + "Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{");
        String answer = readToClose(slow);
        assertTrue(answer.startsWith("HTTP/1.1 408"), answer);
        assertTrue(answer.contains("server.request_timeout_ms"), answer);

        Socket keepAlive = connect(port);
        send(keepAlive, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        String served = readToClose(keepAlive);
        assertTrue(served.startsWith("HTTP/1.1 200"), "answered, then closed once idle: " + served);
    }

    @Test
    void anErrorNeverEchoesALargeValue() throws Exception {
        int port = start(ServerLimits.defaults());
        String body = "{\"steps\":\"" + "x".repeat(60_000) + "\"}";
        Socket socket = connect(port);
        send(socket, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n"
                + "Content-Type: application/json\r\nConnection: close\r\nContent-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body);
        String answer = readToClose(socket);
        assertTrue(answer.startsWith("HTTP/1.1 400"), answer);
        assertTrue(answer.length() < 1_000, "the error quotes the first 80 characters of the value, not 60,000: "
                + answer.length());

        // Any error message, whatever made it long, is cut: here a 3,000-character path in a 404.
        Socket longPath = connect(port);
        send(longPath, "GET /" + "p".repeat(3_000) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN
                + "\r\nConnection: close\r\n\r\n");
        String notFound = readToClose(longPath);
        assertTrue(notFound.startsWith("HTTP/1.1 404"), notFound);
        assertTrue(notFound.length() < 2_400 && notFound.contains("(3013 characters)"), notFound);
    }
}
