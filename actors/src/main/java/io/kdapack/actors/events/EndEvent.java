package io.kdapack.actors.events;

import io.kdapack.actors.job.JobState;

/**
 * The last event of a job run.
 *
 * @param state terminal state
 * @param step  the last optimizer step completed
 * @param error why the job failed, or null
 */
public record EndEvent(JobState state, long step, String error) implements JobEvent {
}
