package io.kdapack.api.server;

import io.kdapack.actors.cluster.LocalJobs;
import io.kdapack.actors.cluster.RunRefused;
import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.api.http.ApiException;
import io.kdapack.config.ConfigException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * A worker member's {@link LocalJobs}: its own {@link JobService} (the one a single JVM serves HTTP with), whose
 * {@link ApiException}s become {@link RunRefused} with the same status, message and field, so that an api member
 * answers exactly what a single server would.
 */
final class LocalJobsAdapter implements LocalJobs {

    private final JobService jobs;
    private final JobFactory factory;

    LocalJobsAdapter(JobService jobs, JobFactory factory) {
        this.jobs = jobs;
        this.factory = factory;
    }

    /** A run continues from the job's record and newest checkpoint, which for a new job means from the start. */
    @Override
    public CompletionStage<JobStatus> start(String jobId) {
        return refusing(jobs.resume(jobId));
    }

    @Override
    public CompletionStage<Optional<JobStatus>> get(String jobId) {
        return refusing(jobs.get(jobId).thenApply(handle -> handle.map(JobHandle::status)));
    }

    @Override
    public CompletionStage<List<JobStatus>> list() {
        return refusing(jobs.list().thenApply(handles -> handles.stream().map(JobHandle::status).toList()));
    }

    @Override
    public CompletionStage<JobStatus> cancel(String jobId) {
        return refusing(jobs.cancel(jobId));
    }

    @Override
    public CompletionStage<Optional<JobStatus>> purge(String jobId) {
        return refusing(jobs.purge(jobId));
    }

    @Override
    public RankSpec rankSpec(String jobId, int rank, ExchangeSettings exchange, ActorRef<RankEvent> listener)
            throws Exception {
        try {
            return factory.rankSpec(jobId, rank, exchange, listener);
        } catch (Exception e) {
            throw refusal(e);
        }
    }

    @Override
    public long totalSteps(String jobId) throws Exception {
        try {
            return factory.totalSteps(jobId);
        } catch (Exception e) {
            throw refusal(e);
        }
    }

    @Override
    public Path journal(String jobId) {
        return factory.eventJournal(jobId);
    }

    private static Exception refusal(Exception e) {
        return switch (e) {
            case ApiException api -> new RunRefused(api.status().code(), api.getMessage(), api.field());
            case ConfigException config -> new RunRefused(400, config.getMessage(), config.key());
            case IllegalArgumentException bad -> new RunRefused(400, bad.getMessage(), null);
            default -> e;
        };
    }

    private static <T> CompletionStage<T> refusing(CompletionStage<T> stage) {
        return stage.exceptionally(failure -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                    : failure;
            throw switch (cause) {
                case ApiException api -> new RunRefused(api.status().code(), api.getMessage(), api.field());
                case ConfigException config -> new RunRefused(400, config.getMessage(), config.key());
                case IllegalArgumentException bad -> new RunRefused(400, bad.getMessage(), null);
                default -> new CompletionException(cause);
            };
        });
    }
}
