package io.kdapack.api.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.training.pipeline.TrainingBackend;
import java.util.List;

/**
 * The one seam between the HTTP server and the training loop: turns a job configuration (the document
 * {@code kdapack train --config} reads, as a JSON tree) into the {@link TrainingBackend} the actor pipeline
 * runs ({@link io.kdapack.api.jobs.TrainingJobFactory} in production).
 *
 * <p>Implementations may block (they read dataset indices); the server calls them off its I/O threads.
 * Dataset prefixes in a configuration must go through {@link io.kdapack.api.http.DataRoot#dataset}. Errors:
 * {@link io.kdapack.config.ConfigException} (binding the document with the config module) or
 * {@link io.kdapack.api.http.ApiException} for a bad configuration (400 with the key as field),
 * IllegalArgumentException for anything else the caller got wrong (400).
 */
public interface JobFactory {

    /** A new job's backend; its checkpoints and job record live under a directory named by {@code jobId}. */
    TrainingBackend create(String jobId, JsonNode config) throws Exception;

    /** The backend of an existing job, continuing from its newest checkpoint. */
    TrainingBackend resume(String jobId) throws Exception;

    /** Jobs found on disk that have not finished (for example after a restart); they can be resumed. */
    List<String> unfinishedJobs();

    /**
     * Where job {@code jobId}'s event history is kept on disk ({@link io.kdapack.actors.events.EventJournal}), so that
     * it outlives the server; null (the default) keeps it in memory only.
     */
    default java.nio.file.Path eventJournal(String jobId) {
        return null;
    }

    /**
     * The data-parallel ranks of job {@code jobId} ({@code train.data_parallel} of its record): how many distinct
     * workers a cluster places its run on. 1 by default.
     */
    default int ranks(String jobId) throws Exception {
        return 1;
    }

    /**
     * Removes every file of job {@code jobId} (its directory under the factory's jobs directory, nothing outside it);
     * the server calls it only for a job that is not running. Nothing by default.
     *
     * @return whether the job had files to remove
     */
    default boolean purge(String jobId) throws Exception {
        return false;
    }

    /** Forgets a job that {@link #create} built but the server refused (its files, if any); nothing by default. */
    default void discard(String jobId) throws Exception {
    }

    /**
     * Rank {@code rank} of data-parallel job {@code jobId} (a cluster worker runs it, {@link
     * io.kdapack.actors.cluster.parallel.RankRunner}): the job's configuration, dataset and checkpoint directory from
     * its record, as {@link #resume} reads them. Refused by default.
     */
    default io.kdapack.actors.cluster.parallel.RankSpec rankSpec(String jobId, int rank,
            io.kdapack.actors.cluster.parallel.ExchangeSettings exchange,
            org.apache.pekko.actor.typed.ActorRef<io.kdapack.actors.cluster.parallel.RankEvent> listener)
            throws Exception {
        throw new IllegalArgumentException("this server's job factory does not run data-parallel jobs");
    }

    /** The {@code train.steps} of job {@code jobId}'s record. */
    default long totalSteps(String jobId) throws Exception {
        throw new IllegalArgumentException("this server's job factory does not run data-parallel jobs");
    }
}
