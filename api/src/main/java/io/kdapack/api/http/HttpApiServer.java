package io.kdapack.api.http;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/** Bootstrap of the HTTP server: binds, and on close stops accepting and shuts the event loops down. */
public final class HttpApiServer implements AutoCloseable {

    /** Jobs have checkpointed before the server closes, so in-flight responses need only a short grace. */
    private static final long QUIET_MILLIS = 100;
    private static final long TIMEOUT_MILLIS = 5000;

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Channel channel;

    private HttpApiServer(EventLoopGroup boss, EventLoopGroup workers, Channel channel) {
        this.boss = boss;
        this.workers = workers;
        this.channel = channel;
    }

    /** Binds {@code bind:port} (port 0 picks a free one) and serves with {@code initializer}. */
    public static HttpApiServer start(String bind, int port, ChannelInitializer<? extends Channel> initializer)
            throws InterruptedException {
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        try {
            Channel channel = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childHandler(initializer)
                    .bind(bind, port).sync().channel();
            return new HttpApiServer(boss, workers, channel);
        } catch (RuntimeException | InterruptedException e) {
            boss.shutdownGracefully();
            workers.shutdownGracefully();
            throw e;
        }
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /** Stops accepting, then closes open connections (event streams included) within a few seconds. */
    @Override
    public void close() {
        try {
            channel.close().syncUninterruptibly();
        } finally {
            var bossDone = boss.shutdownGracefully(QUIET_MILLIS, TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            var workersDone = workers.shutdownGracefully(QUIET_MILLIS, TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            bossDone.syncUninterruptibly();
            workersDone.syncUninterruptibly();
        }
    }
}
