package io.kdapack.config;

import java.util.List;

/**
 * Pekko Cluster membership of {@code kdapack serve} ({@code cluster}; the whole section is optional and off by
 * default: without {@code enabled} one JVM does everything). Every key is described in {@code docs/cluster.md}.
 *
 * @param enabled           join a Pekko Cluster (Artery TCP) instead of running alone
 * @param host              the address other members reach this node at (Artery's canonical host name)
 * @param port              Artery's TCP port; 0 picks a free one (only sensible for a node no one lists as a seed)
 * @param seedNodes         {@code host:port} of the members a node contacts to join; empty: this node alone starts a
 *                          new cluster (it is its own seed)
 * @param roles             {@code api} (serves HTTP, reaches jobs anywhere), {@code worker} (runs jobs), or both
 * @param splitBrainResolver Pekko's split brain resolver strategy, which downs the members on the losing side of a
 *                          partition (or crashed ones) once the membership has been stable for {@code stableAfterMs}
 * @param stableAfterMs     how long the set of unreachable members must stay the same before the resolver decides
 * @param failureTimeoutMs  heartbeats a member may miss for this long before it is unreachable (the failure
 *                          detector's acceptable heartbeat pause)
 * @param joinTimeoutMs     longest the node waits at start to be a member that is {@code Up}; then it exits naming
 *                          {@code cluster.seed_nodes}
 */
public record ClusterConfig(boolean enabled, String host, int port, List<String> seedNodes, List<String> roles,
                            SplitBrainStrategy splitBrainResolver, long stableAfterMs, long failureTimeoutMs,
                            long joinTimeoutMs) {

    /** The strategies of Pekko's split brain resolver that need nothing but the membership itself. */
    public enum SplitBrainStrategy {
        /** The side with more than half the members stays (on a tie, the side with the lowest address). */
        KEEP_MAJORITY,
        /** The side with the oldest member stays. */
        KEEP_OLDEST,
        /** Every member downs itself at a partition: nothing runs on a half. */
        DOWN_ALL;

        /** The name in Pekko's configuration ({@code keep-majority}). */
        public String pekkoName() {
            return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        }
    }

    public static final String ROLE_API = "api";
    public static final String ROLE_WORKER = "worker";

    public static ClusterConfig defaults() {
        return new ClusterConfig(false, "127.0.0.1", 2552, List.of(), List.of(ROLE_API, ROLE_WORKER),
                SplitBrainStrategy.KEEP_MAJORITY, 20_000, 3_000, 30_000);
    }

    public boolean hasRole(String role) {
        return roles.contains(role);
    }
}
