package io.kdapack.cli;

import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.jobs.TrainingJobFactory;
import io.kdapack.api.server.ApiToken;
import io.kdapack.api.server.JobFactory;
import io.kdapack.api.server.KdapackServer;
import io.kdapack.api.server.ServerSettings;
import io.kdapack.config.ClusterConfig;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import java.util.concurrent.atomic.AtomicBoolean;
import io.kdapack.training.HybridModels;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code kdapack serve}: the HTTP training server; SIGTERM checkpoints running jobs, then exits. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Run the HTTP training server (REST + server-sent events); see /openapi.yaml.")
final class ServeCommand implements Callable<Integer> {

    @Option(names = "--config", description = "Configuration file (YAML), merged with KDAPACK_* variables and "
            + "kdapack.* system properties; its server and cluster sections apply (docs/configuration.md, docs/cluster.md).")
    Path config;

    @Option(names = "--port", description = "TCP port, overriding server.port (0 = any free port).")
    Integer port;

    @Option(names = "--bind", description = "Address to listen on, overriding server.host (default 127.0.0.1: this machine only).")
    String bind;

    @Override
    public Integer call() throws Exception {
        KdapackConfig serving = ConfigLoader.loadServing(config);
        ServerSettings settings = ServerSettings.from(serving.server());
        if (port != null) {
            settings = settings.withPort(port);
        }
        if (bind != null) {
            settings = settings.withBind(bind);
        }
        DataRoot dataRoot = new DataRoot(settings.dataRoot());
        ClusterConfig cluster = serving.cluster();
        // A worker alone serves no HTTP: it needs no token, and must not replace the api member's in a shared file.
        String token = cluster.enabled() && !cluster.hasRole(ClusterConfig.ROLE_API) ? null : ApiToken.resolve(settings);
        Path jobsDir = settings.tokenFile().toAbsolutePath().getParent().resolve("jobs");
        KdapackServer server = KdapackServer.start(settings, token, jobFactory(dataRoot, jobsDir),
                InferenceLimits.from(serving.server().inference()), jobsDir, cluster);
        AtomicBoolean closing = new AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            closing.set(true);
            server.close();
        }, "kdapack-shutdown"));
        if (cluster.enabled()) {
            System.err.println("kdapack serve: cluster member " + server.clusterAddress() + " up, roles "
                    + cluster.roles() + " (jobs in " + jobsDir + ", which every member must see)");
            // Downed by the cluster (the split brain resolver, or removed): this process can no longer serve.
            server.whenTerminated().thenRun(() -> {
                if (!closing.get()) {
                    System.err.println("kdapack serve: this member left the cluster (downed or removed); exiting");
                    Thread.ofPlatform().start(() -> System.exit(1));
                }
            });
        }
        if (server.address() != null) {
            System.err.println("kdapack serve: listening on http://" + server.address().getHostString() + ":"
                    + server.address().getPort() + " (data root " + dataRoot.root() + ", jobs in " + jobsDir + "; "
                    + (settings.token() == null ? "bearer token written to " + settings.tokenFile().toAbsolutePath()
                            : "bearer token from the configuration") + ")");
        }
        new CountDownLatch(1).await(); // serve until the JVM is stopped; the shutdown hook closes the server
        return 0;
    }

    /**
     * The only place where jobs get their training backend: the {@code kdapack train} loop, dataset paths confined to
     * {@code dataRoot}, job directories (record and checkpoints) under {@code jobsDir} (beside the token file).
     */
    private static JobFactory jobFactory(DataRoot dataRoot, Path jobsDir) throws IOException {
        return new TrainingJobFactory(dataRoot, jobsDir, HybridModels.FACTORY);
    }
}
