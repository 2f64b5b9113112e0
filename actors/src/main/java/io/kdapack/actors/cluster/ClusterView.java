package io.kdapack.actors.cluster;

import java.util.List;

/**
 * The membership as one api member sees it ({@code GET /v1/cluster}).
 *
 * @param self    this member's address ({@code pekko://kdapack@host:port})
 * @param leader  the current leader's address, or null while there is none
 * @param members every member, in address order
 */
public record ClusterView(String self, String leader, List<Member> members) {

    /**
     * @param address   {@code pekko://kdapack@host:port}
     * @param roles     {@code api} and/or {@code worker}
     * @param status    Pekko's member status name: {@code Joining}, {@code WeaklyUp}, {@code Up}, {@code Leaving},
     *                  {@code Exiting}, {@code Down}, {@code Removed}, {@code PreparingForShutdown},
     *                  {@code ReadyForShutdown}
     * @param reachable whether this member's failure detector hears it (false: unreachable, a failure pending)
     * @param jobs      ids of the runs placed on it that have not ended
     */
    public record Member(String address, List<String> roles, String status, boolean reachable, List<String> jobs) {
    }
}
