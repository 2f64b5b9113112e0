package io.kdapack.actors.cluster;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEvent;
import io.kdapack.actors.events.StepEvent;

/**
 * One event of a job as the {@link EventTopic} carries it from the worker that runs the job to every api node: a step or
 * the run's end (exactly one is not null). The worker has written it to the job's {@code events.jsonl} before it is
 * published, which is what lets a stream fill what it missed from that file.
 */
public record JobEventMessage(String jobId, StepEvent step, EndEvent end) implements ClusterMessage {

    public static JobEventMessage of(String jobId, JobEvent event) {
        return switch (event) {
            case StepEvent s -> new JobEventMessage(jobId, s, null);
            case EndEvent e -> new JobEventMessage(jobId, null, e);
        };
    }

    public JobEvent event() {
        return step != null ? step : end;
    }
}
