package io.kdapack.training;

/**
 * Where the wall time of one optimizer step went, and the gradient traffic of a data-parallel step.
 *
 * @param computeNanos  forward and backward passes, block sums and the optimizer update: the step's time less the two
 *                      below
 * @param waitNanos     blocked until the other ranks were ready (all-gathers of counts and losses, and the start of
 *                      the gradient exchange); 0 for one process
 * @param exchangeNanos the gradient exchange once every rank was ready; 0 for one process
 * @param bytesSent     gradient bytes this rank sent
 * @param bytesReceived gradient bytes this rank received
 */
public record StepTiming(long computeNanos, long waitNanos, long exchangeNanos, long bytesSent, long bytesReceived) {

    /** Before the first step. */
    public static final StepTiming NONE = new StepTiming(0, 0, 0, 0, 0);
}
