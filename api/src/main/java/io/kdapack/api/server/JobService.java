package io.kdapack.api.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.actors.cluster.ClusterView;
import io.kdapack.actors.cluster.RunRefused;
import io.kdapack.actors.job.EvaluationRefused;
import io.kdapack.actors.job.EvaluationTicket;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobOutOfMemory;
import io.kdapack.actors.job.JobRefused;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import io.kdapack.api.http.ApiException;
import io.kdapack.config.ConfigException;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.WeightSnapshot;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.japi.function.Function;
import org.apache.pekko.pattern.StatusReply;
import org.slf4j.LoggerFactory;

/**
 * The job operations behind the HTTP API: asks the {@link JobManager} actor (never blocking the caller) and
 * calls the {@link JobFactory} on a separate executor because building a backend may block. Failures come
 * back as {@link ApiException}s with the HTTP status to answer.
 */
public final class JobService {

    private final ActorRef<JobManager.Command> manager;
    private final Scheduler scheduler;
    private final JobFactory factory;
    private final Executor blocking;
    private final Duration timeout;
    private final SecureRandom random = new SecureRandom();

    public JobService(ActorRef<JobManager.Command> manager, Scheduler scheduler, JobFactory factory,
                      Executor blocking, Duration timeout) {
        this.manager = manager;
        this.scheduler = scheduler;
        this.factory = factory;
        this.blocking = blocking;
        this.timeout = timeout;
    }

    /** The cluster this server is a member of, or empty for a server on its own. */
    public CompletionStage<Optional<ClusterView>> cluster() {
        return ask(JobManager.DescribeCluster::new);
    }

    /** Builds a backend for {@code config} and starts it under a fresh id. */
    public CompletionStage<JobStatus> create(JsonNode config) {
        String id = "j" + HexFormat.of().formatHex(nextId());
        return CompletableFuture.supplyAsync(() -> build(() -> factory.create(id, config)), blocking)
                .thenCompose(backend -> start(id, backend, true));
    }

    /** Starts a new run of a job that is not running, from its newest checkpoint. */
    public CompletionStage<JobStatus> resume(String id) {
        return get(id).thenCompose(handle -> {
            if (handle.isPresent() && !handle.get().status().state().isResumable()) {
                JobState state = handle.get().status().state();
                throw ApiException.conflict("job " + id + (state.isTerminal()
                        ? " has " + state.name().toLowerCase() + "; nothing to resume"
                        : " is " + state.name().toLowerCase()));
            }
            if (handle.isPresent() && JobOutOfMemory.describes(handle.get().status().error())) {
                throw ApiException.conflict("job " + id + " ran out of memory; resuming it would again: "
                        + handle.get().status().error());
            }
            return CompletableFuture.supplyAsync(() -> build(() -> factory.resume(id)), blocking)
                    .thenCompose(backend -> start(id, backend, false));
        });
    }

    public CompletionStage<Optional<JobHandle>> get(String id) {
        return ask(replyTo -> new JobManager.GetJob(id, replyTo));
    }

    public CompletionStage<List<JobHandle>> list() {
        return ask(JobManager.ListJobs::new);
    }

    public List<String> unfinishedJobs() {
        return factory.unfinishedJobs();
    }

    /**
     * Cancels a running job: 404 if unknown, 409 if it already ended, a cluster member's refusal as it gave it (503
     * while the job's worker is unreachable or does not answer).
     */
    public CompletionStage<JobStatus> cancel(String id) {
        return get(id).thenCompose(handle -> {
            JobStatus status = handle.orElseThrow(() -> ApiException.notFound("no job " + id)).status();
            if (status.state().isTerminal()) {
                throw ApiException.conflict("job " + id + " has already ended (" + status.state().name().toLowerCase() + ")");
            }
            return this.<StatusReply<Optional<JobStatus>>>ask(replyTo -> new JobManager.CancelJob(id, replyTo))
                    .thenApply(reply -> {
                        if (reply.isError()) {
                            throw startError(reply.getError());
                        }
                        return reply.getValue().orElseThrow(() -> ApiException.notFound("no job " + id));
                    });
        });
    }

    /**
     * Removes a job that is not running: the manager forgets its status and history, then the factory deletes its
     * files (on the blocking executor). 409 while it runs or waits, 404 when neither the manager nor the disk knows it.
     *
     * @return the job's last status, or empty when only its files were left (from an earlier server)
     */
    public CompletionStage<Optional<JobStatus>> purge(String id) {
        return this.<StatusReply<Optional<JobStatus>>>ask(replyTo -> new JobManager.Purge(id, replyTo))
                .thenApplyAsync(reply -> {
                    if (reply.isError()) {
                        throw startError(reply.getError());
                    }
                    boolean hadFiles;
                    try {
                        hadFiles = factory.purge(id);
                    } catch (IllegalArgumentException e) {
                        throw ApiException.conflict(e.getMessage());
                    } catch (Exception e) {
                        throw new CompletionException(e);
                    } finally {
                        manager.tell(new JobManager.PurgeDone(id));
                    }
                    if (!hadFiles && reply.getValue().isEmpty()) {
                        throw ApiException.notFound("no job " + id);
                    }
                    return reply.getValue();
                }, blocking);
    }

    /**
     * The loss of {@code batch} under job {@code id}'s current weights: 404 unknown job, 409 not running (or
     * stopped while the evaluation waited for its step), 503 too many evaluations waiting or no answer in time.
     */
    public CompletionStage<BatchLoss> evaluate(String id, MicroBatch batch) {
        return evaluate(id, batch, newEvaluationTicket());
    }

    /** A ticket that dies when this service stops waiting for the answer (its ask timeout). */
    public EvaluationTicket newEvaluationTicket() {
        return EvaluationTicket.within(timeout);
    }

    /** As {@link #evaluate(String, MicroBatch)}; the job drops the work unrun once {@code ticket} has died. */
    public CompletionStage<BatchLoss> evaluate(String id, MicroBatch batch, EvaluationTicket ticket) {
        return get(id).thenCompose(handle -> {
            JobStatus status = handle.orElseThrow(() -> ApiException.notFound("no job " + id)).status();
            if (status.state().isTerminal()) {
                throw ApiException.conflict("job " + id + " is not running (" + status.state().name().toLowerCase() + ")");
            }
            return this.<StatusReply<BatchLoss>>ask(replyTo -> new JobManager.Evaluate(id, batch, ticket, replyTo),
                            "job " + id + " (its model is busy with a step, or stuck)")
                    .thenApply(reply -> {
                        if (reply.isError()) {
                            throw evaluationError(reply.getError());
                        }
                        return reply.getValue();
                    });
        });
    }

    /**
     * Job {@code id}'s weights as of its last applied optimizer step, or {@link WeightSnapshot#unchanged} when they are
     * still those of {@code unlessStep}: 404 unknown job, 409 not running or no step applied yet, 503 no answer in time.
     */
    public CompletionStage<WeightSnapshot> snapshotWeights(String id, long unlessStep) {
        return this.<StatusReply<WeightSnapshot>>ask(replyTo -> new JobManager.SnapshotWeights(id, unlessStep, replyTo),
                        "job " + id + " (its model is busy with a step, or stuck)")
                .thenApply(reply -> {
                    if (reply.isError()) {
                        throw evaluationError(reply.getError());
                    }
                    return reply.getValue();
                });
    }

    /** A refusal for the job's sake maps to its status; any other error is the batch's fault (400). */
    private static ApiException evaluationError(Throwable error) {
        String message = error.getMessage();
        if (error instanceof EvaluationRefused refused) {
            return switch (refused.reason()) {
                case UNKNOWN_JOB -> ApiException.notFound(message);
                case NOT_RUNNING -> ApiException.conflict(message);
                case BUSY -> new ApiException(HttpResponseStatus.SERVICE_UNAVAILABLE, message, null);
            };
        }
        return ApiException.badRequest(message, null);
    }

    /** Asks every running job to checkpoint and stop; completes when all have stopped. */
    public CompletionStage<Done> checkpointAndStopAll(Duration within) {
        return AskPattern.ask(manager, JobManager.StopAll::new, within, scheduler);
    }

    /** @param newJob the job's files were made for this request: remove them if the manager refuses it */
    private CompletionStage<JobStatus> start(String id, TrainingBackend backend, boolean newJob) {
        java.nio.file.Path journal = factory.eventJournal(id);
        return this.<StatusReply<JobStatus>>ask(replyTo -> new JobManager.StartJob(id, backend, journal, replyTo))
                .thenApplyAsync(reply -> {
                    if (reply.isError()) {
                        if (newJob) {
                            discard(id);
                        }
                        throw startError(reply.getError());
                    }
                    return reply.getValue();
                }, blocking);
    }

    /**
     * 400 for a job too large for the memory budget, 429 when every slot and queue place is taken, a cluster member's
     * refusal as it gave it, else 409.
     */
    private static ApiException startError(Throwable error) {
        if (error instanceof RunRefused refused) {
            return new ApiException(HttpResponseStatus.valueOf(refused.status()), refused.getMessage(), refused.field());
        }
        if (error instanceof JobRefused refused) {
            return switch (refused.reason()) {
                case TOO_LARGE -> ApiException.badRequest(refused.getMessage(), refused.field());
                case FULL -> new ApiException(HttpResponseStatus.TOO_MANY_REQUESTS, refused.getMessage(), null);
                case CONFLICT -> ApiException.conflict(refused.getMessage());
            };
        }
        return ApiException.conflict(error.getMessage());
    }

    /** Whether the server can take a new job now (readiness), and why not. */
    public CompletionStage<JobManager.Capacity> capacity() {
        return ask(JobManager.GetCapacity::new);
    }

    private void discard(String id) {
        try {
            factory.discard(id);
        } catch (Exception e) {
            LoggerFactory.getLogger(JobService.class).warn("could not remove the files of refused job {}: {}", id,
                    e.toString());
        }
    }

    private <T> CompletionStage<T> ask(Function<ActorRef<T>, JobManager.Command> message) {
        return ask(message, "the job manager");
    }

    /** Asks the manager; a timeout becomes 503 naming {@code who} did not answer. */
    private <T> CompletionStage<T> ask(Function<ActorRef<T>, JobManager.Command> message, String who) {
        return AskPattern.ask(manager, message, timeout, scheduler).exceptionally(failure -> {
            Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
            if (cause instanceof TimeoutException) {
                throw new ApiException(HttpResponseStatus.SERVICE_UNAVAILABLE, who + " did not answer within " + timeout,
                        null);
            }
            throw failure instanceof CompletionException c ? c : new CompletionException(failure);
        });
    }

    private byte[] nextId() {
        byte[] bytes = new byte[6];
        random.nextBytes(bytes);
        return bytes;
    }

    @FunctionalInterface
    private interface BackendCall {
        TrainingBackend call() throws Exception;
    }

    /** Runs a factory call, keeping API errors and turning misuse into 400s. */
    private static TrainingBackend build(BackendCall call) {
        try {
            return call.call();
        } catch (ApiException e) {
            throw e;
        } catch (ConfigException e) {
            throw ApiException.badRequest(e.getMessage(), e.key());
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage(), null);
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    }
}
