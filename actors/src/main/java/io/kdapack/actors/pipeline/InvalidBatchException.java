package io.kdapack.actors.pipeline;

/** A packed batch that breaks its contract; {@link #field()} names the offending array (wire name). */
public final class InvalidBatchException extends IllegalArgumentException {

    private final String field;

    public InvalidBatchException(String field, String message) {
        super(field + ": " + message);
        this.field = field;
    }

    public String field() {
        return field;
    }
}
