package io.kdapack.actors.cluster.parallel;

import io.kdapack.config.KdapackConfig;
import io.kdapack.training.ModelFactory;
import io.kdapack.training.TrainingCorpora;
import java.nio.file.Path;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Rank {@code rank} of a data-parallel job of {@code config.train().dataParallel()} ranks, as the worker member that
 * runs it builds it (nothing here crosses the network).
 *
 * @param jobId         the job, named in every {@link RankEvent}
 * @param rank          r in {@code [0, N)}: the rank runs block r of every step's micro-batches
 * @param config        the job's configuration, the same on every rank ({@code train.data_parallel} = N)
 * @param models        builds the model (the same initial weights on every rank, from {@code train.seed})
 * @param corpora       the dataset, at a path every worker sees; the rank reads only its own micro-batches
 * @param checkpointDir the job's checkpoint directory, shared by all ranks: rank 0 writes there, every rank resumes
 *                      from there
 * @param exchange      chunk size, window and timeout of the gradient transport
 * @param listener      receives the {@link RankEvent}s (may live on another member)
 */
public record RankSpec(String jobId, int rank, KdapackConfig config, ModelFactory models, TrainingCorpora corpora,
                       Path checkpointDir, ExchangeSettings exchange, ActorRef<RankEvent> listener) {

    public RankSpec {
        int ranks = config.train().dataParallel();
        if (rank < 0 || rank >= ranks) {
            throw new IllegalArgumentException("rank " + rank + " outside [0, train.data_parallel = " + ranks + ")");
        }
    }

    /** N. */
    public int ranks() {
        return config.train().dataParallel();
    }
}
