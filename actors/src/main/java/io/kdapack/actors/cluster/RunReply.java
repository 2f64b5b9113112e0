package io.kdapack.actors.cluster;

import io.kdapack.actors.job.JobStatus;

/**
 * A member's answer about one job: its status, or why it was refused; exactly one is not null (a {@link WorkerAgent}
 * that does not know the job answers {@link #unknown}, both null).
 */
public record RunReply(JobStatus status, RunRefused.Refusal refusal) implements ClusterMessage {

    public static RunReply of(JobStatus status) {
        return new RunReply(status, null);
    }

    public static RunReply refused(RunRefused refused) {
        return new RunReply(null, refused.toRefusal());
    }

    public static RunReply unknown() {
        return new RunReply(null, null);
    }
}
