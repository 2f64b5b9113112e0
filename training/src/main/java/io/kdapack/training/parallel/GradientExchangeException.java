package io.kdapack.training.parallel;

/** A collective operation of a data-parallel run could not complete: a rank is gone, or a time limit passed. */
public class GradientExchangeException extends RuntimeException {

    public GradientExchangeException(String message) {
        super(message);
    }

    public GradientExchangeException(String message, Throwable cause) {
        super(message, cause);
    }
}
