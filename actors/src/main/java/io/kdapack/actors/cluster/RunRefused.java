package io.kdapack.actors.cluster;

/**
 * Why a cluster member did not do what was asked of a job, as the HTTP answer the api node gives: {@code status} (400,
 * 404, 409, 429, 503), the message and the request field or configuration key at fault (or null).
 */
public final class RunRefused extends RuntimeException {

    private final int status;
    private final String field;

    public RunRefused(int status, String message, String field) {
        super(message, null, false, false);
        this.status = status;
        this.field = field;
    }

    public int status() {
        return status;
    }

    public String field() {
        return field;
    }

    /** The wire form. */
    public Refusal toRefusal() {
        return new Refusal(status, getMessage(), field);
    }

    /** {@link RunRefused} as it crosses the cluster. */
    public record Refusal(int status, String message, String field) implements ClusterMessage {
        public RunRefused toException() {
            return new RunRefused(status, message, field);
        }
    }
}
