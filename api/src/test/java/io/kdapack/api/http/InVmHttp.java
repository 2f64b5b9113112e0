package io.kdapack.api.http;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.local.LocalServerChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseDecoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One HTTP/1.1 connection to a server pipeline over Netty's in-VM transport: the whole pipeline (codec
 * included) runs on a real event loop thread, as in the server, without a socket. Requests go in as raw
 * bytes; responses come back decoded by a client-side decoder, as heap copies. Unlike an
 * {@code EmbeddedChannel}, whose event loop is whichever thread calls it, this stays correct when responses
 * are completed by actor threads.
 */
final class InVmHttp implements AutoCloseable {

    private static final long WAIT_SECONDS = 10;

    private final EventLoopGroup loops = new MultiThreadIoEventLoopGroup(2, LocalIoHandler.newFactory());
    private final Channel serverSocket;
    private final Channel client;
    private final BlockingQueue<FullHttpResponse> responses = new LinkedBlockingQueue<>();

    InVmHttp(ChannelHandler serverInitializer) throws InterruptedException {
        serverSocket = new ServerBootstrap().group(loops).channel(LocalServerChannel.class)
                .childHandler(serverInitializer).bind(LocalAddress.ANY).sync().channel();
        client = new Bootstrap().group(loops).channel(LocalChannel.class)
                .handler(new ChannelInitializer<LocalChannel>() {
                    @Override
                    protected void initChannel(LocalChannel channel) {
                        channel.pipeline().addLast(new HttpResponseDecoder(), new HttpObjectAggregator(1 << 24),
                                new SimpleChannelInboundHandler<FullHttpResponse>() {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse response) {
                                        // A heap copy: the tests need not release what they read.
                                        responses.add(response.replace(Unpooled.copiedBuffer(response.content())));
                                    }
                                });
                    }
                }).connect(serverSocket.localAddress()).sync().channel();
    }

    /** Sends {@code head} (request line and headers, without the blank line) and {@code body}. */
    void send(String head, byte[] body) throws InterruptedException {
        String fullHead = head + "\r\nContent-Length: " + body.length + "\r\n\r\n";
        write(Unpooled.wrappedBuffer(fullHead.getBytes(StandardCharsets.US_ASCII), body));
    }

    /** Sends bytes as they are: several pipelined requests, or malformed ones. */
    void sendRaw(String bytes) throws InterruptedException {
        write(Unpooled.copiedBuffer(bytes, StandardCharsets.US_ASCII));
    }

    private void write(ByteBuf bytes) throws InterruptedException {
        client.writeAndFlush(bytes).sync();
    }

    /** Waits (bounded) for the next complete response. */
    FullHttpResponse response() throws InterruptedException {
        FullHttpResponse response = responses.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        if (response == null) {
            throw new AssertionError("no response within " + WAIT_SECONDS + " s");
        }
        return response;
    }

    FullHttpResponse exchange(String head, byte[] body) throws InterruptedException {
        send(head, body);
        return response();
    }

    FullHttpResponse exchange(String head, String body) throws InterruptedException {
        return exchange(head, body.getBytes(StandardCharsets.UTF_8));
    }

    /** True once the server has closed the connection, waiting for that at most {@value #WAIT_SECONDS} s. */
    boolean closedByServer() {
        return client.closeFuture().awaitUninterruptibly(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        client.close().syncUninterruptibly();
        serverSocket.close().syncUninterruptibly();
        loops.shutdownGracefully(0, WAIT_SECONDS, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
