package io.kdapack.actors.cluster;

import io.kdapack.actors.job.JobStatus;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * The jobs of this member's own {@link io.kdapack.actors.job.JobManager}, as a {@link WorkerAgent} drives them (the api
 * module adapts its job service to this). Failures complete the stages with a {@link RunRefused}.
 */
public interface LocalJobs {

    /**
     * Starts a run of job {@code jobId} from its record in the shared jobs directory, continuing from its newest
     * checkpoint (a new job has none and starts from step 0).
     */
    CompletionStage<JobStatus> start(String jobId);

    CompletionStage<Optional<JobStatus>> get(String jobId);

    CompletionStage<List<JobStatus>> list();

    /** Cancels a running job (a {@link RunRefused} 404 or 409 when it is unknown or has ended). */
    CompletionStage<JobStatus> cancel(String jobId);
}
