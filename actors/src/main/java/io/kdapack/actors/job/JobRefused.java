package io.kdapack.actors.job;

/** The error of a {@link JobManager.StartJob} reply: why the job was not accepted. */
public final class JobRefused extends RuntimeException {

    public enum Reason {
        /** Its memory estimate alone exceeds the server's budget: it could never run. */
        TOO_LARGE,
        /** Every running slot and every queue place is taken: try again later. */
        FULL,
        /** The job id is running, cannot be resumed, or the server is shutting down. */
        CONFLICT
    }

    private final Reason reason;
    private final String field;

    /** @param field the configuration key to blame (a refusal for size), or null */
    public JobRefused(Reason reason, String message, String field) {
        super(message, null, false, false);
        this.reason = reason;
        this.field = field;
    }

    public Reason reason() {
        return reason;
    }

    public String field() {
        return field;
    }
}
