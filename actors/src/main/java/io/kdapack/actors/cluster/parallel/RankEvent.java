package io.kdapack.actors.cluster.parallel;

import io.kdapack.training.StepResult;
import io.kdapack.training.StepTiming;

/**
 * What a {@link RankRunner} reports to its listener ({@link RankSpec#listener()}), in this order: {@link Started}, then
 * per step {@link StepDone} (and on rank 0 {@link CheckpointWritten} after each checkpoint), then exactly one of
 * {@link Finished} or {@link Failed}. Every rank reports every step: the step's losses, gradient norm and learning rate
 * are the same bits on all ranks, the timing is each rank's own.
 */
public sealed interface RankEvent extends ParallelMessage {

    /** The job this rank belongs to. */
    String jobId();

    /** The rank that reports. */
    int rank();

    /**
     * The rank has its peers and its trainer, restored from the newest checkpoint rank 0 found.
     *
     * @param fromStep the optimizer steps already taken (0 for a fresh start)
     */
    record Started(String jobId, int rank, long fromStep) implements RankEvent {
    }

    /**
     * One optimizer step done.
     *
     * @param result the step's losses, gradient norm, learning rate, validation (equal on every rank)
     * @param timing this rank's compute, waiting and exchange time and its gradient bytes sent and received
     */
    record StepDone(String jobId, int rank, StepResult result, StepTiming timing) implements RankEvent {
    }

    /** Rank 0 wrote the checkpoint of {@code step}, atomically, at {@code path} (the shared run directory). */
    record CheckpointWritten(String jobId, int rank, long step, String path) implements RankEvent {
    }

    /** The rank completed all {@code steps} of the run (rank 0: its last checkpoint is written). */
    record Finished(String jobId, int rank, long steps) implements RankEvent {
    }

    /**
     * The rank stopped without completing the run: {@code reason} says why (a peer lost or silent beyond the exchange
     * timeout, a stop asked for, a data or checkpoint error). No half-step is applied; the newest complete checkpoint
     * stays usable.
     *
     * @param stepsDone the optimizer steps it had completed
     */
    record Failed(String jobId, int rank, long stepsDone, String reason) implements RankEvent {
    }
}
