package io.kdapack.actors.job;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What an evaluation request is still worth: until its deadline (when its caller stops waiting for the answer), and
 * unless its client has gone. The model stage drops a dead ticket's evaluation instead of computing a loss no one
 * will read. Thread safe: the HTTP side abandons it, the model stage reads it.
 */
public final class EvaluationTicket {

    /** A ticket that never dies (callers inside the process that wait for as long as it takes). */
    public static final EvaluationTicket UNBOUNDED = new EvaluationTicket(Long.MAX_VALUE);

    private final long deadlineNanos;
    private final AtomicBoolean abandoned = new AtomicBoolean();

    private EvaluationTicket(long deadlineNanos) {
        this.deadlineNanos = deadlineNanos;
    }

    /** A ticket whose caller waits {@code patience} from now. */
    public static EvaluationTicket within(Duration patience) {
        return new EvaluationTicket(System.nanoTime() + patience.toNanos());
    }

    /** The client has gone: nobody will read the answer. */
    public void abandon() {
        abandoned.set(true);
    }

    /** Why the evaluation is not worth running any more, or null while it is. */
    public String whyDead() {
        if (abandoned.get()) {
            return "the client went away before the evaluation ran";
        }
        if (this != UNBOUNDED && System.nanoTime() - deadlineNanos > 0) {
            return "the evaluation could not run before its caller's deadline (the job's steps come first)";
        }
        return null;
    }
}
