package io.kdapack.api.http;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.AttributeKey;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Caps the open connections of one server, in all and per client IP address: a connection over either cap is closed
 * as soon as it is accepted, before a byte of it is read (no response: nothing of the request is known yet). One
 * instance is shared by every connection of a server.
 */
@ChannelHandler.Sharable
public final class ConnectionLimiter extends ChannelInboundHandlerAdapter {

    /** A connection that was counted, and against which address (null: a transport without one). */
    private record Counted(InetAddress address) {
    }

    private static final AttributeKey<Counted> COUNTED = AttributeKey.valueOf("kdapack.connection-counted");

    private final int maxConnections;
    private final int maxPerAddress;
    private final AtomicInteger open = new AtomicInteger();
    private final ConcurrentHashMap<InetAddress, AtomicInteger> perAddress = new ConcurrentHashMap<>();
    private final AtomicInteger refused = new AtomicInteger();

    public ConnectionLimiter(int maxConnections, int maxPerAddress) {
        if (maxConnections < 1 || maxPerAddress < 1) {
            throw new IllegalArgumentException("connection caps must be >= 1, got " + maxConnections + " and "
                    + maxPerAddress);
        }
        this.maxConnections = maxConnections;
        this.maxPerAddress = maxPerAddress;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        InetAddress address = ctx.channel().remoteAddress() instanceof InetSocketAddress socket ? socket.getAddress()
                : null;
        if (open.incrementAndGet() > maxConnections) {
            open.decrementAndGet();
            refuse(ctx);
            return;
        }
        if (!admitFrom(address)) {
            open.decrementAndGet();
            refuse(ctx);
            return;
        }
        ctx.channel().attr(COUNTED).set(new Counted(address));
        ctx.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Counted counted = ctx.channel().attr(COUNTED).getAndSet(null);
        if (counted != null) {
            open.decrementAndGet();
            if (counted.address() != null) {
                perAddress.computeIfPresent(counted.address(),
                        (key, count) -> count.decrementAndGet() == 0 ? null : count);
            }
            ctx.fireChannelInactive();
        }
    }

    private void refuse(ChannelHandlerContext ctx) {
        refused.incrementAndGet();
        ctx.close();
    }

    /** Counts a connection from {@code address} if it is under its cap (in-VM transports have no address). */
    private boolean admitFrom(InetAddress address) {
        if (address == null) {
            return true;
        }
        boolean[] admitted = {false};
        perAddress.compute(address, (key, count) -> {
            AtomicInteger value = count == null ? new AtomicInteger() : count;
            if (value.get() < maxPerAddress) {
                value.incrementAndGet();
                admitted[0] = true;
            }
            return value.get() == 0 ? null : value;
        });
        return admitted[0];
    }

    /** Connections open now. */
    public int open() {
        return open.get();
    }

    /** Connections closed at once because a cap was reached, since the server started. */
    public int refused() {
        return refused.get();
    }
}
