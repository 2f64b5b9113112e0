package io.kdapack.api.http;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bootstrap of the HTTP server: binds, and on close stops accepting and shuts the event loops down.
 *
 * <p>Transport: Netty's native epoll where it loads (Linux x86-64), else NIO. Epoll costs an event-stream write less
 * CPU (no selector key sets, gathering writes straight from the buffers), which counts with hundreds of subscribers.
 */
public final class HttpApiServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HttpApiServer.class);
    /** Name prefix of the threads that serve connections (for per-thread CPU figures). */
    public static final String WORKER_THREADS = "http-worker";

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
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> serverChannel = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("http-accept"), io);
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(0, new DefaultThreadFactory(WORKER_THREADS), io);
        try {
            Channel channel = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(serverChannel)
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childHandler(initializer)
                    .bind(bind, port).sync().channel();
            LOG.info("HTTP transport: {}", epoll ? "epoll" : "NIO (epoll unavailable: " + Epoll.unavailabilityCause() + ")");
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
