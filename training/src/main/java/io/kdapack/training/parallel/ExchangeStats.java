package io.kdapack.training.parallel;

/**
 * What exchanging the gradients of one step cost one rank.
 *
 * @param bytesSent     gradient bytes this rank sent (payload; framing excluded)
 * @param bytesReceived gradient bytes this rank received
 * @param waitNanos     time blocked until every rank was ready to exchange (the slowest rank's compute, seen from here)
 * @param exchangeNanos time from then until this rank held the summed gradients (transfer and additions)
 */
public record ExchangeStats(long bytesSent, long bytesReceived, long waitNanos, long exchangeNanos) {

    /** Nothing exchanged (one rank). */
    public static final ExchangeStats NONE = new ExchangeStats(0, 0, 0, 0);

    /** This plus {@code other}, field by field. */
    public ExchangeStats plus(ExchangeStats other) {
        return new ExchangeStats(bytesSent + other.bytesSent, bytesReceived + other.bytesReceived,
                waitNanos + other.waitNanos, exchangeNanos + other.exchangeNanos);
    }
}
