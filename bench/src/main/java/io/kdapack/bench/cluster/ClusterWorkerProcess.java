package io.kdapack.bench.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.ParallelTransport;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankRunner;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.TrainingCorpora;
import java.nio.file.Path;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * One worker JVM of {@code kdapack bench cluster}.
 *
 * <ul>
 *   <li>{@code rank SEED CONFIG CHECKPOINTS JOB RANK LISTENER}: joins the cluster at {@code SEED} ({@code host:port}),
 *       spawns {@link RankRunner} rank {@code RANK} of job {@code JOB} at {@code /user/rank-RANK}, registers it with
 *       the receptionist under {@link #serviceKey}, reports to {@code LISTENER} (an actor reference in
 *       {@link ActorRefResolver} form) and exits when the runner stops.</li>
 *   <li>{@code local CONFIG}: the same configuration's steps in this JVM with {@link Trainer} (what one worker does
 *       alone), printing {@code step <n> <computeNanos> <json>} after each.</li>
 * </ul>
 */
public final class ClusterWorkerProcess {

    private ClusterWorkerProcess() {
    }

    /** The receptionist key under which a job's rank runners are found. */
    public static ServiceKey<RankRunner.Command> serviceKey(String jobId) {
        return ServiceKey.create(RankRunner.Command.class, "kdapack-bench-" + jobId);
    }

    /** The cluster configuration of a bench member on loopback, with the gradient transport's Artery settings. */
    public static Config memberConfig(String seed) {
        Config base = ConfigFactory.parseString("""
                pekko.actor.provider = cluster
                pekko.actor.allow-java-serialization = off
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.cluster.jmx.enabled = off
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.exit-jvm = off
                """ + (seed == null ? "" : "pekko.cluster.seed-nodes = [\"pekko://kdapack@" + seed + "\"]\n"));
        Config loaded = ConfigFactory.load();
        return base.withFallback(ParallelTransport.artery(loaded.getBytes("kdapack.parallel.chunk-bytes")))
                .withFallback(loaded);
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("local")) {
            local(ConfigLoader.load(Path.of(args[1])));
            return;
        }
        if (args.length != 7 || !args[0].equals("rank")) {
            System.err.println("usage: ClusterWorkerProcess rank SEED CONFIG CHECKPOINTS JOB RANK LISTENER | local CONFIG");
            System.exit(2);
        }
        KdapackConfig config = ConfigLoader.load(Path.of(args[2]));
        Path checkpoints = Path.of(args[3]);
        String job = args[4];
        int rank = Integer.parseInt(args[5]);
        String listener = args[6];
        ActorSystem<Void> system = ActorSystem.create(Behaviors.<Void>setup(context -> {
            ActorRef<RankEvent> events = ActorRefResolver.get(context.getSystem()).resolveActorRef(listener);
            RankSpec spec = new RankSpec(job, rank, config, HybridModels.FACTORY,
                    TrainingCorpora.single(DatasetPaths.trainPrefix(config.train().data().prefix())), checkpoints,
                    ExchangeSettings.from(context.getSystem().settings().config()), events);
            ActorRef<RankRunner.Command> runner = context.spawn(RankRunner.create(spec), "rank-" + rank);
            context.watch(runner);
            context.getSystem().receptionist().tell(Receptionist.register(serviceKey(job), runner));
            Behavior<Void> behavior = Behaviors.receive(Void.class)
                    .onSignal(Terminated.class, t -> Behaviors.stopped())
                    .build();
            return behavior;
        }), "kdapack", memberConfig(args[1]));
        system.getWhenTerminated().toCompletableFuture().get();
        System.exit(0);
    }

    private static void local(KdapackConfig config) throws Exception {
        Path checkpoints = java.nio.file.Files.createTempDirectory("kdapack-bench-cluster-local");
        try (Trainer trainer = Trainer.create(config, HybridModels.FACTORY,
                DatasetPaths.trainPrefix(config.train().data().prefix()), checkpoints)) {
            while (!trainer.finished()) {
                StepResult result = trainer.step();
                System.out.println("step " + result.step() + " " + trainer.lastTiming().computeNanos() + " "
                        + result.toJson());
                System.out.flush();
            }
        } finally {
            java.nio.file.Files.deleteIfExists(checkpoints);
        }
    }
}
