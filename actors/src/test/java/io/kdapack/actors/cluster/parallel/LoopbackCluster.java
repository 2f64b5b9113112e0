package io.kdapack.actors.cluster.parallel;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.SpawnProtocol;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * {@code n} actor systems in this JVM on loopback Artery ports, joined as one Pekko cluster, with Java serialization
 * off (so every message between them goes through {@link ParallelSerializer}).
 */
final class LoopbackCluster implements AutoCloseable {
    final List<ActorSystem<SpawnProtocol.Command>> systems = new ArrayList<>();

    LoopbackCluster(int n, long chunkBytes, int window, Duration timeout) throws InterruptedException {
        Config config = ConfigFactory.parseString("""
                pekko.actor.provider = cluster
                pekko.actor.allow-java-serialization = off
                pekko.actor.warn-about-java-serializer-usage = off
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.cluster.jmx.enabled = off
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.exit-jvm = off
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                """ + "kdapack.parallel.chunk-bytes = " + chunkBytes + "\nkdapack.parallel.window = " + window
                + "\nkdapack.parallel.timeout = " + timeout.toMillis() + "ms\n")
                .withFallback(ParallelTransport.artery(chunkBytes))
                .withFallback(ConfigFactory.load());
        for (int i = 0; i < n; i++) {
            systems.add(ActorSystem.create(SpawnProtocol.create(), "kdapack", config));
        }
        for (ActorSystem<?> system : systems) {
            Cluster.get(system).manager().tell(Join.create(Cluster.get(systems.getFirst()).selfMember().address()));
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!allUp()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the loopback cluster did not come up within 20 s");
            }
            Thread.sleep(50);
        }
    }

    private boolean allUp() {
        for (ActorSystem<?> system : systems) {
            var members = Cluster.get(system).state().getMembers();
            int up = 0;
            for (var m : members) {
                if (m.status() == MemberStatus.up()) {
                    up++;
                }
            }
            if (up != systems.size()) {
                return false;
            }
        }
        return true;
    }

    ExchangeSettings settings() {
        return ExchangeSettings.from(systems.getFirst().settings().config());
    }

    /** Spawns {@code behavior} as {@code /user/name} on system {@code i}. */
    <T> ActorRef<T> spawn(int i, Behavior<T> behavior, String name) throws Exception {
        ActorSystem<SpawnProtocol.Command> system = systems.get(i);
        CompletionStage<ActorRef<T>> ref = AskPattern.ask(system,
                replyTo -> new SpawnProtocol.Spawn<>(behavior, name, Props.empty(), replyTo), Duration.ofSeconds(10),
                system.scheduler());
        return ref.toCompletableFuture().get();
    }

    @Override
    public void close() {
        for (ActorSystem<?> system : systems.reversed()) {
            system.terminate();
        }
        for (ActorSystem<?> system : systems) {
            try {
                system.getWhenTerminated().toCompletableFuture().get(java.util.concurrent.TimeUnit.SECONDS.toMillis(20),
                        java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                // A system that does not stop in time is left to the JVM's exit.
            }
        }
    }
}
