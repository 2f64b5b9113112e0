package io.kdapack.actors.job;

import io.kdapack.actors.events.JobEventLog;

/**
 * What the job manager knows about a job's current run.
 *
 * @param status latest snapshot
 * @param events the run's event history (SSE streams read and replay from it)
 * @param gauges live queue depths of the run's pipeline
 */
public record JobHandle(JobStatus status, JobEventLog events, PipelineGauges gauges) {
}
