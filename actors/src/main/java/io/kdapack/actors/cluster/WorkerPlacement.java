package io.kdapack.actors.cluster;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;

/** How the {@link JobDirectory} picks the workers of a run. */
final class WorkerPlacement {

    private WorkerPlacement() {
    }

    /**
     * {@code ranks} distinct workers for one run, rank 0 first: those with the fewest runs not ended, ties broken by
     * address (so that a placement is reproducible). Refused with 503 when no worker is up, and with 400 naming
     * {@code train.data_parallel} when fewer workers than ranks are up.
     */
    static List<ActorRef<WorkerAgent.Command>> choose(Collection<ActorRef<WorkerAgent.Command>> workers,
                                                     Map<ActorRef<WorkerAgent.Command>, Integer> activeRuns, int ranks,
                                                     Function<ActorRef<?>, Address> addressOf) {
        if (ranks < 1) {
            throw new RunRefused(400, "train.data_parallel must be >= 1, got " + ranks, "train.data_parallel");
        }
        if (workers.isEmpty()) {
            throw new RunRefused(503, "no worker member is up in the cluster (a member with cluster.roles including"
                    + " worker); try again once one has joined", null);
        }
        if (workers.size() < ranks) {
            throw new RunRefused(400, "train.data_parallel = " + ranks + " asks for " + ranks
                    + " workers, but the cluster has " + workers.size() + " worker member(s) up", "train.data_parallel");
        }
        return workers.stream().sorted(JobDirectory.byLoad(activeRuns, addressOf)).limit(ranks).toList();
    }
}
