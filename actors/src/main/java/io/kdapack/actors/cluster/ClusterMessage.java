package io.kdapack.actors.cluster;

/**
 * A message that may cross from one cluster member to another: serialized by {@link ClusterSerializer} (JSON), so
 * every such message is a record of plain values, job statuses and events, and typed actor references.
 */
public interface ClusterMessage {
}
