package io.kdapack.actors.cluster;

import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.actors.job.JobStatus;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;

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

    /**
     * Purges a job that is not running, as a single server does ({@code DELETE /v1/jobs/{id}?purge=true}): its job
     * manager forgets its status and history and its directory in the shared jobs directory is removed. Its last status,
     * empty when only its files were left; a {@link RunRefused} 409 while it runs, 404 when neither the job manager nor
     * the disk knows it.
     */
    CompletionStage<Optional<JobStatus>> purge(String jobId);

    /**
     * Rank {@code rank} of data-parallel job {@code jobId}, from its record in the shared jobs directory (blocking: it
     * reads the record and checks the dataset); a {@link RunRefused} when the job cannot run (unknown, bad record).
     */
    RankSpec rankSpec(String jobId, int rank, ExchangeSettings exchange, ActorRef<RankEvent> listener) throws Exception;

    /** The job's {@code train.steps}, from its record (a {@link RunRefused} 404 for a job not on disk). */
    long totalSteps(String jobId) throws Exception;

    /** The job's {@code events.jsonl} in the shared jobs directory. */
    Path journal(String jobId);
}
