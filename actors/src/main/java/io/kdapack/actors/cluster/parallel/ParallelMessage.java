package io.kdapack.actors.cluster.parallel;

/**
 * Every message of the data-parallel protocol, including the {@link RankEvent}s: they cross the network in
 * {@link ParallelSerializer}'s binary form (bound to this type in the actors module's {@code reference.conf}), never in
 * Java serialization.
 */
public interface ParallelMessage {
}
