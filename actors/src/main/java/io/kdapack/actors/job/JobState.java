package io.kdapack.actors.job;

/** Lifecycle of a job run. */
public enum JobState {
    /** Accepted, waiting for a free slot or for memory within the server's budget. */
    QUEUED,
    /** Restoring its checkpoint and starting the pipeline. */
    STARTING,
    RUNNING,
    /** All planned steps done. */
    SUCCEEDED,
    /** A stage threw or timed out; the job's error says which and why. */
    FAILED,
    /** Cancelled by a user; its last checkpoint is intact. */
    CANCELLED,
    /** Checkpointed and stopped because the server shut down; resumable. */
    STOPPED;

    public boolean isTerminal() {
        return this != QUEUED && this != STARTING && this != RUNNING;
    }

    /** Whether a run in this state can be resumed from its checkpoint. */
    public boolean isResumable() {
        return this == FAILED || this == CANCELLED || this == STOPPED;
    }
}
