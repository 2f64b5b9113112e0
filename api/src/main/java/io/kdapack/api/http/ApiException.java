package io.kdapack.api.http;

import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * A request that cannot be served, answered with {@code status} and the JSON body
 * {@code {"error": message, "field": field}}.
 */
public class ApiException extends RuntimeException {

    private final HttpResponseStatus status;
    private final String field;

    public ApiException(HttpResponseStatus status, String message, String field) {
        super(message);
        this.status = status;
        this.field = field;
    }

    public static ApiException badRequest(String message, String field) {
        return new ApiException(HttpResponseStatus.BAD_REQUEST, message, field);
    }

    public static ApiException notFound(String message) {
        return new ApiException(HttpResponseStatus.NOT_FOUND, message, null);
    }

    public static ApiException conflict(String message) {
        return new ApiException(HttpResponseStatus.CONFLICT, message, null);
    }

    public HttpResponseStatus status() {
        return status;
    }

    /** The request field at fault (JSON path such as {@code tokens[1][3]}), or null. */
    public String field() {
        return field;
    }
}
