package io.kdapack.actors.job;

/**
 * The error of an {@link JobManager.Evaluate} reply when the job, not the batch, is why nothing was evaluated;
 * any other error reply means the batch itself was refused by the model.
 */
public final class EvaluationRefused extends RuntimeException {

    public enum Reason {
        /** No job of that id. */
        UNKNOWN_JOB,
        /** The job has ended, or stopped before the step the evaluation waited for finished. */
        NOT_RUNNING,
        /** Too many evaluations already wait for the job's step in progress. */
        BUSY
    }

    private final Reason reason;

    public EvaluationRefused(Reason reason, String message) {
        super(message, null, false, false);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
