package io.kdapack.api.http;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Lets a request through only with {@code Authorization: Bearer <token>}, except {@code /healthz} and {@code GET} of the
 * dashboard ({@code /}, {@code /ui/…}). It decides on
 * the request head, before the body aggregator: a refused request's body is never buffered (nor is {@code 100 Continue}
 * sent for it). Refused requests get 401 with a JSON error; when a body follows the head, the connection is closed
 * after the 401 instead of reading that body, else it stays usable. The comparison takes the same time wherever the
 * tokens differ.
 */
public final class BearerAuthHandler extends ChannelInboundHandlerAdapter {

    private static final String PREFIX = "Bearer ";
    private final byte[] token;
    /** The contents of a refused request are being dropped, up to its last one. */
    private boolean dropping;

    public BearerAuthHandler(String token) {
        this.token = token.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object message) {
        if (message instanceof HttpRequest request) {
            dropping = false;
            if (isOpen(request) || hasToken(request)) {
                ctx.fireChannelRead(message);
            } else {
                refuse(ctx, request);
            }
        } else if (dropping && message instanceof HttpContent content) {
            dropping = !(content instanceof LastHttpContent);
            ReferenceCountUtil.release(content);
        } else {
            ctx.fireChannelRead(message);
        }
    }

    private void refuse(ChannelHandlerContext ctx, HttpRequest request) {
        boolean bodyFollows = !(request instanceof LastHttpContent)
                && (HttpUtil.isTransferEncodingChunked(request) || HttpUtil.getContentLength(request, 0L) > 0);
        boolean keepAlive = HttpUtil.isKeepAlive(request) && !bodyFollows;
        String presented = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        dropping = !(request instanceof LastHttpContent);
        ReferenceCountUtil.release(request);
        FullHttpResponse response = Responses.error(new ApiException(HttpResponseStatus.UNAUTHORIZED,
                presented == null ? "missing bearer token (Authorization: Bearer <token>)" : "invalid bearer token",
                "Authorization"));
        response.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        if (keepAlive) {
            Responses.send(ctx, response, true);
        } else {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.channel().config().setAutoRead(false); // read nothing more of the body
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }

    /**
     * Open: the health check, {@code GET} of the dashboard's page and assets ({@link Dashboard}: they hold no data, and
     * a browser cannot send a header when it opens a page), and requests the decoder could not parse (answered 400
     * downstream).
     */
    private static boolean isOpen(HttpRequest request) {
        if (!request.decoderResult().isSuccess()) {
            return true;
        }
        String path = new QueryStringDecoder(request.uri()).path();
        return path.equals("/healthz")
                || request.method().equals(HttpMethod.GET) && (path.equals("/") || path.startsWith("/ui/"));
    }

    private boolean hasToken(HttpRequest request) {
        String header = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (header == null || !header.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) {
            return false;
        }
        byte[] presented = header.substring(PREFIX.length()).trim().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(presented, token);
    }
}
