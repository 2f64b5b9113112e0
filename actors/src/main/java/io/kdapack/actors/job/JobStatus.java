package io.kdapack.actors.job;

import java.time.Instant;

/**
 * A snapshot of a job, as {@code GET /v1/jobs/{id}} shows it.
 *
 * @param id         job id
 * @param state      lifecycle state
 * @param step       optimizer steps completed
 * @param totalSteps optimizer steps planned
 * @param lastLoss   loss of the last completed step, or null before the first
 * @param startedAt  when this run started (null while queued)
 * @param finishedAt when it reached a terminal state, or null
 * @param error      why it failed, or null
 */
public record JobStatus(String id, JobState state, long step, long totalSteps, Double lastLoss, Instant startedAt,
                        Instant finishedAt, String error) {

    /** @param step the step the run resumes from (0 for a fresh run) */
    static JobStatus starting(String id, long step, long totalSteps, Instant now) {
        return new JobStatus(id, JobState.STARTING, step, totalSteps, null, now, null, null);
    }

    /** @param step the step the run will resume from (0 for a fresh run) */
    static JobStatus queued(String id, long step, long totalSteps) {
        return new JobStatus(id, JobState.QUEUED, step, totalSteps, null, null, null, null);
    }

    /** The same snapshot with the start time the job manager recorded (supervisors take their own clock reading). */
    JobStatus withStartedAt(Instant start) {
        return new JobStatus(id, state, step, totalSteps, lastLoss, start, finishedAt, error);
    }

    JobStatus running(long step, Double loss) {
        return new JobStatus(id, JobState.RUNNING, step, totalSteps, loss, startedAt, null, null);
    }

    JobStatus finished(JobState terminal, Instant now, String why) {
        return new JobStatus(id, terminal, step, totalSteps, lastLoss, startedAt, now, why);
    }
}
