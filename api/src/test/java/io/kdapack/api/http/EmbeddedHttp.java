package io.kdapack.api.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseDecoder;
import java.nio.charset.StandardCharsets;

/**
 * Drives a server pipeline in an {@link EmbeddedChannel} with raw HTTP/1.1 bytes, and decodes what it writes
 * back with a client-side decoder: the whole pipeline (codec included) runs, without a socket.
 */
final class EmbeddedHttp implements AutoCloseable {

    final EmbeddedChannel server;
    private final EmbeddedChannel client = new EmbeddedChannel(new HttpResponseDecoder(), new HttpObjectAggregator(1 << 24));

    EmbeddedHttp(ChannelHandler initializer) {
        server = new EmbeddedChannel(initializer);
    }

    /** Sends {@code head} (request line and headers, without the blank line) and {@code body}. */
    void send(String head, byte[] body) {
        String fullHead = head + "\r\nContent-Length: " + body.length + "\r\n\r\n";
        ByteBuf bytes = Unpooled.wrappedBuffer(fullHead.getBytes(StandardCharsets.US_ASCII), body);
        server.writeInbound(bytes);
    }

    /** Waits (bounded) for the next complete response; responses may be completed by other threads. */
    FullHttpResponse response() throws InterruptedException {
        for (int attempt = 0; attempt < 2000; attempt++) {
            server.runPendingTasks();
            ByteBuf out;
            while ((out = server.readOutbound()) != null) {
                client.writeInbound(out);
            }
            FullHttpResponse response = client.readInbound();
            if (response != null) {
                return response;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("no response within 10 s");
    }

    FullHttpResponse exchange(String head, byte[] body) throws InterruptedException {
        send(head, body);
        return response();
    }

    FullHttpResponse exchange(String head, String body) throws InterruptedException {
        return exchange(head, body.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
        server.finishAndReleaseAll();
        client.finishAndReleaseAll();
    }
}
