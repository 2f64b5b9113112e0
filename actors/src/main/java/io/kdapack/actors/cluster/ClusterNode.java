package io.kdapack.actors.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.config.ClusterConfig;
import io.kdapack.config.ConfigException;
import java.net.BindException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * How a {@code kdapack serve} process becomes a Pekko Cluster member: the Pekko settings of a {@code cluster} section
 * ({@link #pekkoConfig}), and the start that either ends with this member {@code Up} or fails naming the key at fault
 * ({@link #start}).
 */
public final class ClusterNode {

    /** The actor system's name: part of every member's address ({@code pekko://kdapack@host:port}). */
    public static final String SYSTEM_NAME = "kdapack";

    private ClusterNode() {
    }

    /**
     * Pekko's configuration for {@code cluster}: the cluster provider over Artery TCP at {@code host:port}, the seed
     * nodes, the roles, the split brain resolver (on, with the configured strategy and stable-after), the failure
     * detector's acceptable pause, and {@link ClusterSerializer} for every {@link ClusterMessage}.
     */
    public static Config pekkoConfig(ClusterConfig cluster) {
        List<String> seeds = cluster.seedNodes().stream().map(s -> "\"pekko://" + SYSTEM_NAME + "@" + s + "\"").toList();
        return ConfigFactory.parseString("""
                pekko.actor.provider = cluster
                pekko.remote.artery.transport = tcp
                pekko.remote.artery.canonical.hostname = "%s"
                pekko.remote.artery.canonical.port = %d
                pekko.cluster.seed-nodes = [%s]
                pekko.cluster.roles = [%s]
                pekko.cluster.downing-provider-class = "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"
                pekko.cluster.split-brain-resolver.active-strategy = %s
                pekko.cluster.split-brain-resolver.stable-after = %dms
                pekko.cluster.failure-detector.acceptable-heartbeat-pause = %dms
                pekko.cluster.shutdown-after-unsuccessful-join-seed-nodes = off
                pekko.cluster.jmx.enabled = off
                pekko.actor.serializers.kdapack-cluster = "io.kdapack.actors.cluster.ClusterSerializer"
                pekko.actor.serialization-bindings { "io.kdapack.actors.cluster.ClusterMessage" = kdapack-cluster }
                pekko.actor.serialization-identifiers { "io.kdapack.actors.cluster.ClusterSerializer" = %d }
                """.formatted(cluster.host(), cluster.port(), String.join(", ", seeds),
                String.join(", ", cluster.roles()), cluster.splitBrainResolver().pekkoName(), cluster.stableAfterMs(),
                cluster.failureTimeoutMs(), ClusterSerializer.IDENTIFIER));
    }

    /**
     * Creates the actor system ({@code create}, with {@link #pekkoConfig} among its settings) and waits until this member
     * is {@code Up}, at most {@code cluster.join_timeout_ms}. Without seed nodes the member joins itself (a new cluster).
     *
     * @throws ConfigException naming {@code cluster.port} when Artery cannot bind it, or {@code cluster.seed_nodes}
     *                         when no seed let it join in time (the actor system is terminated then)
     */
    public static <T> ActorSystem<T> start(ClusterConfig cluster, Supplier<ActorSystem<T>> create)
            throws InterruptedException {
        ActorSystem<T> system;
        try {
            system = create.get();
        } catch (RuntimeException e) {
            if (causedBy(e, BindException.class)) {
                throw new ConfigException("cluster.port", cluster.port(), "cannot listen on " + cluster.host() + ":"
                        + cluster.port() + " (" + rootMessage(e) + "): another process holds the port, or the host is"
                        + " not an address of this machine (cluster.host)", null);
            }
            throw e;
        }
        Cluster members = Cluster.get(system);
        if (cluster.seedNodes().isEmpty()) {
            members.manager().tell(Join.create(members.selfMember().address()));
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(cluster.joinTimeoutMs());
        while (members.selfMember().status() != MemberStatus.up()) {
            if (System.nanoTime() > deadline || system.whenTerminated().isCompleted()) {
                system.terminate();
                system.getWhenTerminated().toCompletableFuture().completeOnTimeout(null, 10, TimeUnit.SECONDS).join();
                throw new ConfigException("cluster.seed_nodes", String.join(",", cluster.seedNodes()),
                        "could not join the cluster within cluster.join_timeout_ms = " + cluster.joinTimeoutMs()
                                + " ms: no seed node answered (is one started, and reachable at that address?)", null);
            }
            Thread.sleep(Duration.ofMillis(50));
        }
        return system;
    }

    private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t) || t.getMessage() != null && t.getMessage().contains("Address already in use")) {
                return true;
            }
        }
        return false;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.toString() : t.getMessage();
    }
}
