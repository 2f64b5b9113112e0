package io.kdapack.api.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** Building and sending complete responses. */
public final class Responses {

    private Responses() {
    }

    public static FullHttpResponse json(HttpResponseStatus status, Object body) {
        return bytes(status, "application/json", StrictJson.write(body));
    }

    public static FullHttpResponse text(HttpResponseStatus status, String contentType, String body) {
        return bytes(status, contentType, body.getBytes(StandardCharsets.UTF_8));
    }

    public static FullHttpResponse bytes(HttpResponseStatus status, String contentType, byte[] body) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        HttpUtil.setContentLength(response, body.length);
        return response;
    }

    /** Longest error message or field name sent: an error never echoes a large request back. */
    static final int MAX_ERROR_CHARS = 2000;

    /** {@code {"error": message, "field": field}} with the exception's status, each cut to {@link #MAX_ERROR_CHARS}. */
    public static FullHttpResponse error(ApiException error) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", truncate(error.getMessage()));
        body.put("field", truncate(error.field()));
        return json(error.status(), body);
    }

    private static String truncate(String text) {
        return text == null || text.length() <= MAX_ERROR_CHARS ? text
                : text.substring(0, MAX_ERROR_CHARS) + "… (" + text.length() + " characters)";
    }

    /** Sends {@code response}; closes the connection afterwards unless the request asked to keep it alive. */
    public static void send(ChannelHandlerContext ctx, FullHttpResponse response, boolean keepAlive) {
        if (keepAlive) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            ctx.writeAndFlush(response);
        } else {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
