package io.kdapack.actors.cluster.parallel;

import org.apache.pekko.actor.typed.ActorRef;

/** What ranks send each other's {@link RankRunner} on the ordinary lane. */
sealed interface ControlMessage extends RankRunner.Command, ParallelMessage {

    /** A rank introduces its chunk receiver to a peer, once, after {@link RankRunner.Peers}. */
    record Hello(int fromRank, ActorRef<GradientMessage> gradients) implements ControlMessage {
    }

    /**
     * Rank {@code fromRank}'s training thread completed the run: everything it sent for the last collective operation
     * went out before this, on the same lane.
     */
    record Done(int fromRank) implements ControlMessage {
    }

    /** Rank {@code fromRank}'s contribution to all-gather number {@code exchange}. */
    record GatherPart(long exchange, int fromRank, long[] values) implements ControlMessage {
    }
}
