package io.kdapack.cli;

import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.jobs.TrainingJobFactory;
import io.kdapack.api.server.ApiToken;
import io.kdapack.api.server.JobFactory;
import io.kdapack.api.server.KdapackServer;
import io.kdapack.api.server.ServerSettings;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.ServerConfig;
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
            + "kdapack.* system properties; its server section applies (docs/configuration.md).")
    Path config;

    @Option(names = "--port", description = "TCP port, overriding server.port (0 = any free port).")
    Integer port;

    @Option(names = "--bind", description = "Address to listen on, overriding server.host (default 127.0.0.1: this machine only).")
    String bind;

    @Override
    public Integer call() throws Exception {
        ServerConfig serverConfig = ConfigLoader.loadServer(config);
        ServerSettings settings = ServerSettings.from(serverConfig);
        if (port != null) {
            settings = settings.withPort(port);
        }
        if (bind != null) {
            settings = settings.withBind(bind);
        }
        DataRoot dataRoot = new DataRoot(settings.dataRoot());
        String token = ApiToken.resolve(settings);
        Path jobsDir = settings.tokenFile().toAbsolutePath().getParent().resolve("jobs");
        KdapackServer server = KdapackServer.start(settings, token, jobFactory(dataRoot, jobsDir),
                InferenceLimits.from(serverConfig.inference()), jobsDir);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "kdapack-shutdown"));
        System.err.println("kdapack serve: listening on http://" + server.address().getHostString() + ":"
                + server.address().getPort() + " (data root " + dataRoot.root() + ", jobs in " + jobsDir + "; "
                + (settings.token() == null ? "bearer token written to " + settings.tokenFile().toAbsolutePath()
                        : "bearer token from the configuration") + ")");
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
