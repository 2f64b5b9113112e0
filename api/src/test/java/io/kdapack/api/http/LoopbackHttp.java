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
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseDecoder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One HTTP/1.1 connection to a server pipeline over TCP on the loopback interface (an ephemeral port): the whole
 * pipeline (codec included) runs on a real event loop thread, as in the server. Requests go in as raw bytes;
 * responses come back decoded by a client-side decoder, as heap copies. Unlike an {@code EmbeddedChannel}, whose
 * event loop is whichever thread calls it, this stays correct when responses are completed by actor threads. (Not
 * Netty's in-VM transport: a response written just before the server closes was lost there in about 1 exchange of
 * 70, the client seeing the close and no response; TCP delivers what was written before the FIN.)
 */
final class LoopbackHttp implements AutoCloseable {

    private static final long WAIT_SECONDS = 10;

    private final EventLoopGroup loops = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    private final Channel serverSocket;
    private final Channel client;
    private final BlockingQueue<FullHttpResponse> responses = new LinkedBlockingQueue<>();

    LoopbackHttp(ChannelHandler serverInitializer) throws InterruptedException {
        serverSocket = new ServerBootstrap().group(loops).channel(NioServerSocketChannel.class)
                .childHandler(serverInitializer).bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync()
                .channel();
        client = new Bootstrap().group(loops).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
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
