package io.kdapack.api.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Lets a request through only with {@code Authorization: Bearer <token>}, except {@code GET /healthz}.
 * Others get 401 with a JSON error. The comparison takes the same time wherever the tokens differ.
 */
public final class BearerAuthHandler extends ChannelInboundHandlerAdapter {

    private static final String PREFIX = "Bearer ";
    private final byte[] token;

    public BearerAuthHandler(String token) {
        this.token = token.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object message) {
        if (!(message instanceof FullHttpRequest request) || isOpen(request) || hasToken(request)) {
            ctx.fireChannelRead(message);
            return;
        }
        boolean keepAlive = HttpUtil.isKeepAlive(request);
        String presented = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        request.release();
        FullHttpResponse response = Responses.error(new ApiException(HttpResponseStatus.UNAUTHORIZED,
                presented == null ? "missing bearer token (Authorization: Bearer <token>)" : "invalid bearer token",
                "Authorization"));
        response.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        Responses.send(ctx, response, keepAlive);
    }

    /** Only the health check and requests the decoder could not parse (answered 400 downstream) are open. */
    private static boolean isOpen(FullHttpRequest request) {
        return !request.decoderResult().isSuccess()
                || new QueryStringDecoder(request.uri()).path().equals("/healthz");
    }

    private boolean hasToken(FullHttpRequest request) {
        String header = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (header == null || !header.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) {
            return false;
        }
        byte[] presented = header.substring(PREFIX.length()).trim().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(presented, token);
    }
}
