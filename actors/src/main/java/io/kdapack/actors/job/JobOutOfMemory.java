package io.kdapack.actors.job;

import java.util.concurrent.Callable;

/**
 * A job stage ran out of heap. Pekko treats an {@link OutOfMemoryError} as fatal (with
 * {@code pekko.jvm-exit-on-fatal-error} on, the JVM exits; off, the whole actor system stops), so the stages turn it
 * into this ordinary exception where their work allocates: the job fails alone, its allocations become garbage with
 * it, and the other jobs and the server keep running. Such a job is not offered for resume (it would run out again).
 */
public final class JobOutOfMemory extends RuntimeException {

    /** How the error of a job that ran out of memory begins (its status, its end event, its event journal). */
    public static final String ERROR_PREFIX = "out of memory";

    public JobOutOfMemory(String during, OutOfMemoryError error) {
        super(ERROR_PREFIX + " " + during + " (" + error.getMessage() + "); the server's memory estimate for this job "
                + "was too low: make the model or the batch smaller, or give the server more heap (-Xmx)", null, false,
                false);
    }

    /** Whether {@code error}, a job's error text, says the job ran out of memory. */
    public static boolean describes(String error) {
        return error != null && error.startsWith(ERROR_PREFIX);
    }

    /** Runs {@code work}, turning an {@link OutOfMemoryError} into a {@link JobOutOfMemory} that names {@code during}. */
    public static <T> T guard(String during, Callable<T> work) throws Exception {
        try {
            return work.call();
        } catch (OutOfMemoryError e) {
            throw new JobOutOfMemory(during, e);
        }
    }
}
