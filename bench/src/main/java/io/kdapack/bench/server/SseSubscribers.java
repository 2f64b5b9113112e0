package io.kdapack.bench.server;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.zip.CRC32;

/**
 * Many SSE clients of one job's event stream ({@code GET /v1/jobs/{id}/events}), all served by one thread with one NIO
 * selector: a load of real HTTP connections that costs the client side almost nothing but the reads. Each subscriber
 * checks what it receives: status 200, step ids consecutive, then the {@code end} event, and keeps a CRC of its
 * {@code id:}/{@code event:}/{@code data:} lines so that callers can check every subscriber saw the same bytes.
 *
 * <p>With a read interval the thread sleeps between rounds of reads once every stream is connected, like a dashboard
 * that refreshes a few times a second: the client side then costs one read per stream per interval instead of a wakeup
 * per event, and the server's writes find no reader to wake. Events wait in the socket buffers meanwhile; none is lost.
 *
 * <p>Used in-process by tests and, through {@link SseSubscribersProcess}, in a separate JVM by {@code kdapack bench
 * server}. Not a general HTTP client: it expects the server's chunked {@code text/event-stream} response, where each
 * event is one chunk, and counts a stream complete once it has read the {@code end} event.
 */
public final class SseSubscribers implements AutoCloseable {

    /** What one subscriber received. */
    public record Stream(long firstId, long lastId, long steps, boolean ended, long crc, String failure) {

        /** Ended normally, with steps {@code 1 … expectedSteps} exactly, ids consecutive. */
        public boolean complete(long expectedSteps) {
            return failure == null && ended && steps == expectedSteps
                    && (expectedSteps == 0 || firstId == 1 && lastId == expectedSteps);
        }
    }

    /** The name of the thread that serves every connection. */
    public static final String THREAD_NAME = "sse-subscribers";
    private static final int MAX_LINE = 1 << 16;
    private static final byte[] ID = ascii("id: ");
    private static final byte[] EVENT = ascii("event: ");
    private static final byte[] DATA = ascii("data: ");
    private static final byte[] STEP_EVENT = ascii("event: step");
    private static final byte[] END_EVENT = ascii("event: end");

    private final Selector selector;
    private final List<Subscriber> subscribers = new ArrayList<>();
    private final CountDownLatch connected;
    private final CountDownLatch finished;
    private final Duration readInterval;
    private final Thread loop;

    private SseSubscribers(InetSocketAddress server, String token, String jobId, int count, Duration readInterval)
            throws IOException {
        if (count < 1) {
            throw new IllegalArgumentException("count must be >= 1, got " + count);
        }
        if (readInterval.isNegative()) {
            throw new IllegalArgumentException("readInterval must be >= 0, got " + readInterval);
        }
        this.readInterval = readInterval;
        byte[] request = ("GET /v1/jobs/" + jobId + "/events HTTP/1.1\r\nHost: " + server.getHostString() + ":"
                + server.getPort() + "\r\nAuthorization: Bearer " + token + "\r\nAccept: text/event-stream\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        selector = Selector.open();
        connected = new CountDownLatch(count);
        finished = new CountDownLatch(count);
        try {
            for (int i = 0; i < count; i++) {
                SocketChannel channel = SocketChannel.open();
                channel.configureBlocking(false);
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                Subscriber subscriber = new Subscriber(channel, ByteBuffer.wrap(request));
                subscribers.add(subscriber);
                channel.register(selector, channel.connect(server) ? SelectionKey.OP_WRITE : SelectionKey.OP_CONNECT,
                        subscriber);
            }
        } catch (IOException e) {
            close();
            throw e;
        }
        loop = Thread.ofPlatform().name(THREAD_NAME).daemon(true).start(this::run);
    }

    private static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Opens {@code count} event streams of job {@code jobId} (connecting in the background).
     *
     * @param readInterval pause between rounds of reads once all are connected; zero: read as events arrive
     */
    public static SseSubscribers connect(InetSocketAddress server, String token, String jobId, int count,
                                         Duration readInterval) throws IOException {
        return new SseSubscribers(server, token, jobId, count, readInterval);
    }

    /** Waits until every subscriber has its {@code 200} response head (the server streams to it from then on). */
    public void awaitConnected(Duration wait) throws InterruptedException, TimeoutException {
        if (!connected.await(wait.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new TimeoutException(connected.getCount() + " of " + subscribers.size()
                    + " subscribers not connected within " + wait + "; first failure: " + firstFailure());
        }
    }

    /** Waits until every stream has ended (end event or closed) and returns what each received, in connection order. */
    public List<Stream> awaitEnd(Duration wait) throws InterruptedException, TimeoutException {
        if (!finished.await(wait.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new TimeoutException(finished.getCount() + " of " + subscribers.size() + " streams still open after "
                    + wait);
        }
        loop.join();
        return subscribers.stream().map(Subscriber::result).toList();
    }

    private String firstFailure() {
        return subscribers.stream().map(s -> s.failure).filter(f -> f != null).findFirst().orElse("none");
    }

    /**
     * The selector loop: connect, send the request, read until every stream is done. Ready keys are handled as the
     * selector reports them (no selected-key set), every read into one buffer.
     */
    private void run() {
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 16);
        byte[] bytes = new byte[buffer.capacity()];
        Consumer<SelectionKey> ready = key -> handle(key, buffer, bytes);
        try {
            while (finished.getCount() > 0 && selector.isOpen()) {
                if (readInterval.isZero() || connected.getCount() > 0) {
                    selector.select(ready, 1000);
                } else {
                    Thread.sleep(readInterval);
                    selector.selectNow(ready);
                }
            }
        } catch (IOException | RuntimeException | InterruptedException e) {
            subscribers.forEach(s -> s.finish("selector failed: " + e));
        }
    }

    /** One ready connection: finish connecting, send the request, or read what has arrived. */
    private static void handle(SelectionKey key, ByteBuffer buffer, byte[] bytes) {
        Subscriber subscriber = (Subscriber) key.attachment();
        try {
            if (key.isConnectable() && subscriber.channel.finishConnect()) {
                key.interestOps(SelectionKey.OP_WRITE);
            }
            if (key.isValid() && key.isWritable()) {
                subscriber.channel.write(subscriber.request);
                if (!subscriber.request.hasRemaining()) {
                    key.interestOps(SelectionKey.OP_READ);
                }
            }
            if (key.isValid() && key.isReadable()) {
                buffer.clear();
                int n = subscriber.channel.read(buffer);
                if (n < 0) {
                    subscriber.finish(subscriber.ended() ? null : "connection closed before the end event");
                } else {
                    buffer.flip();
                    buffer.get(bytes, 0, n);
                    subscriber.accept(bytes, n);
                }
            }
        } catch (IOException | RuntimeException e) {
            subscriber.finish(e.toString());
        }
    }

    /** Closes every connection still open. */
    @Override
    public void close() {
        subscribers.forEach(s -> s.finish("closed by the caller"));
        try {
            selector.close();
        } catch (IOException ignored) {
            // closing: nothing left to release
        }
    }

    /** One connection and the parser of its response. */
    private final class Subscriber {
        final SocketChannel channel;
        final ByteBuffer request;
        private final ResponseParser parser = new ResponseParser();
        private volatile String failure;
        private boolean done;
        private boolean connectedCounted;

        Subscriber(SocketChannel channel, ByteBuffer request) {
            this.channel = channel;
            this.request = request;
        }

        void accept(byte[] bytes, int n) {
            boolean wasConnected = parser.statusSeen;
            parser.accept(bytes, n);
            if (parser.failure != null) {
                finish(parser.failure);
            } else if (!wasConnected && parser.statusSeen) {
                countConnected();
            }
        }

        /** Counts this subscriber in {@link #awaitConnected} once: connected, or finished without being so. */
        private synchronized void countConnected() {
            if (!connectedCounted) {
                connectedCounted = true;
                connected.countDown();
            }
        }

        boolean ended() {
            return parser.ended;
        }

        /** Closes the connection once; {@code why} is null for a normal end. Also called by {@link #close}. */
        synchronized void finish(String why) {
            if (done) {
                return;
            }
            done = true;
            failure = why;
            countConnected(); // if it never connected, awaitConnected must not wait for it
            try {
                channel.close();
            } catch (IOException ignored) {
                // the stream is over either way
            }
            finished.countDown();
        }

        synchronized Stream result() {
            return parser.result(failure);
        }
    }

    /**
     * Runs the response parser over a synthetic stream until the JIT has compiled it, so that a fresh JVM's compilation
     * does not land in a benchmark's measured window.
     *
     * @return what the last pass parsed: 100 steps with ids 1 … 100, no end event (the stream stops after step 100)
     */
    public static Stream warmUp() {
        StringBuilder text = new StringBuilder("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
        for (int step = 1; step <= 100; step++) {
            String event = "id: " + step + "\nevent: step\ndata: {\"step\":" + step + ",\"loss\":1.0}\n\n";
            text.append(Integer.toHexString(event.length())).append("\r\n").append(event).append("\r\n");
        }
        byte[] bytes = text.append("0\r\n\r\n").toString().getBytes(StandardCharsets.US_ASCII);
        Stream parsed = null;
        for (int i = 0; i < 2000; i++) {
            ResponseParser parser = new ResponseParser();
            parser.accept(bytes, bytes.length);
            if (parser.failure != null || parser.steps != 100) {
                throw new IllegalStateException("the warm-up stream did not parse: " + parser.result(null));
            }
            parsed = parser.result(null);
        }
        return parsed;
    }

    /**
     * A line parser over the chunked {@code text/event-stream} response: status line, headers, then the body's lines
     * (chunk-size lines are neither id, event nor data, and are skipped).
     */
    private static final class ResponseParser {
        private byte[] line = new byte[256];
        private int lineLength;
        boolean statusSeen;
        private boolean headersDone;
        private long firstId = -1;
        private long lastId = -1;
        long steps;
        boolean ended;
        private final CRC32 crc = new CRC32();
        String failure;

        void accept(byte[] bytes, int n) {
            for (int i = 0; i < n && failure == null; i++) {
                byte b = bytes[i];
                if (b == '\n') {
                    onLine(lineLength > 0 && line[lineLength - 1] == '\r' ? lineLength - 1 : lineLength);
                    lineLength = 0;
                } else {
                    if (lineLength == line.length) {
                        if (line.length >= MAX_LINE) {
                            failure = "a line longer than " + MAX_LINE + " bytes";
                            return;
                        }
                        line = Arrays.copyOf(line, line.length * 2);
                    }
                    line[lineLength++] = b;
                }
            }
        }

        /** Line {@code line[0, length)}, without its line break. */
        private void onLine(int length) {
            if (!statusSeen) {
                statusSeen = true;
                String status = new String(line, 0, length, StandardCharsets.US_ASCII);
                if (!status.startsWith("HTTP/1.1 200")) {
                    failure = "response " + status;
                }
            } else if (!headersDone) {
                headersDone = length == 0;
            } else if (startsWith(ID, length)) {
                crc.update(line, 0, length);
                crc.update('\n');
                long id = parseLong(ID.length, length);
                if (lastId >= 0 && id != lastId + 1) {
                    failure = "step " + id + " after step " + lastId;
                    return;
                }
                firstId = firstId < 0 ? id : firstId;
                lastId = id;
            } else if (startsWith(EVENT, length) || startsWith(DATA, length)) {
                crc.update(line, 0, length);
                crc.update('\n');
                if (equals(STEP_EVENT, length)) {
                    steps++;
                } else if (equals(END_EVENT, length)) {
                    ended = true;
                }
            }
        }

        private boolean startsWith(byte[] prefix, int length) {
            return length >= prefix.length && Arrays.equals(line, 0, prefix.length, prefix, 0, prefix.length);
        }

        private boolean equals(byte[] text, int length) {
            return length == text.length && startsWith(text, length);
        }

        private long parseLong(int from, int to) {
            long value = 0;
            for (int i = from; i < to; i++) {
                int digit = line[i] - '0';
                if (digit < 0 || digit > 9) {
                    failure = "event id '" + new String(line, 0, to, StandardCharsets.UTF_8) + "' is not a step number";
                    return value;
                }
                value = 10 * value + digit;
            }
            return value;
        }

        Stream result(String closeFailure) {
            return new Stream(firstId, lastId, steps, ended, crc.getValue(), closeFailure != null ? closeFailure : failure);
        }
    }
}
