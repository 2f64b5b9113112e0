package io.kdapack.api.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.actors.inference.ModelSource;
import io.kdapack.actors.job.Admission;
import io.kdapack.actors.job.JobManager;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.http.HttpApiInitializer;
import io.kdapack.api.http.HttpApiServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running server: the job actors, the HTTP API in front of them, and the metrics registry. {@link #close}
 * shuts down gracefully: running jobs checkpoint and stop, then HTTP and the actors stop.
 */
public final class KdapackServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KdapackServer.class);

    private final ActorSystem<JobManager.Command> actors;
    private final ExecutorService factoryCalls;
    private final HttpApiServer http;
    private final JobService jobs;
    private final Duration shutdownWait;
    private final HttpApiInitializer initializer;
    private boolean closed;
    /** Longest a shutdown waits for event streams to deliver what was pending (a batch interval is at most 1 h, but a
     *  stream's default is 1 s; a client that reads nothing is not waited for longer than this). */
    private static final Duration STREAM_DRAIN = Duration.ofSeconds(5);

    private KdapackServer(ActorSystem<JobManager.Command> actors, ExecutorService factoryCalls, HttpApiServer http,
                          JobService jobs, Duration shutdownWait, HttpApiInitializer initializer) {
        this.initializer = initializer;
        this.actors = actors;
        this.factoryCalls = factoryCalls;
        this.http = http;
        this.jobs = jobs;
        this.shutdownWait = shutdownWait;
    }

    /**
     * Starts the actors and the HTTP server.
     *
     * @param token the bearer token (see {@link ApiToken#resolve})
     */
    public static KdapackServer start(ServerSettings settings, String token, JobFactory factory)
            throws IOException, InterruptedException {
        return start(settings, token, factory, InferenceLimits.defaults(),
                settings.tokenFile().toAbsolutePath().getParent().resolve("jobs"));
    }

    /**
     * Starts the actors (the inference actor among them) and the HTTP server.
     *
     * @param inferenceLimits the bounds of {@code /v1/completions}
     * @param jobsDir         where job directories live, so that a job id names a model
     */
    public static KdapackServer start(ServerSettings settings, String token, JobFactory factory,
                                      InferenceLimits inferenceLimits, Path jobsDir)
            throws IOException, InterruptedException {
        byte[] openApi = openApiDocument();
        // Shutdown order is ours (jobs checkpoint, then HTTP, then actors): Pekko's own JVM hook would stop
        // the actors concurrently with it, before the jobs could checkpoint.
        // Pekko's timer wheel ticks whether or not a timeout is due: at its default 10 ms, about 1 % of a core on
        // this 2-core VM, idle or not, and a wakeup on a trainer's core 100 times a second. The server's timeouts
        // are 0.3 s and more, so 100 ms ticks (a timeout fires up to one tick late) lose nothing.
        // A job that runs out of heap fails alone: its stages turn OutOfMemoryError into an ordinary failure
        // (JobOutOfMemory) before Pekko sees it. A fatal error anywhere else leaves the process in an unknown state,
        // so Pekko's exit on it stays on, stated here rather than left to the default.
        Config config = ConfigFactory.parseString("""
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        pekko.scheduler.tick-duration = 100ms
                        pekko.jvm-exit-on-fatal-error = on
                        """)
                .withFallback(ConfigFactory.load());
        ServerLimits limits = settings.limits();
        var admission = new Admission(limits.memoryBudget(), limits.maxRunningJobs(), limits.maxQueuedJobs());
        var actors = ActorSystem.create(JobManager.create(settings.pipeline(), settings.retainFinished(), admission),
                "kdapack", config);
        ExecutorService factoryCalls = Executors.newFixedThreadPool(2, Thread.ofPlatform().name("job-factory-", 0)
                .daemon(true).factory());
        try {
            var jobs = new JobService(actors, actors.scheduler(), factory, factoryCalls, settings.askTimeout());
            var inference = new InferenceService(actors, inferenceLimits, ModelSource.DIRECTORIES,
                    new DataRoot(settings.dataRoot()), jobsDir);
            var metrics = new ServerMetrics();
            metrics.watch(inference.gauges());
            var initializer = new HttpApiInitializer(jobs, metrics, token, settings.maxBodyBytes(), openApi,
                    settings.eventBatch(), limits, inference);
            var http = HttpApiServer.start(settings.bind(), settings.port(), initializer);
            return new KdapackServer(actors, factoryCalls, http, jobs, settings.pipeline().storeTimeout()
                    .plus(settings.pipeline().stepTimeout()), initializer);
        } catch (InterruptedException | RuntimeException e) {
            actors.terminate();
            factoryCalls.shutdownNow();
            throw e;
        }
    }

    public InetSocketAddress address() {
        return http.address();
    }

    /** The job operations the HTTP API calls (for in-process tools such as {@code kdapack bench server}). */
    public JobService jobs() {
        return jobs;
    }

    /** Asks running jobs to checkpoint and stop (waiting at most one step and one checkpoint), then stops. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            jobs.checkpointAndStopAll(shutdownWait).toCompletableFuture().get(shutdownWait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            LOG.warn("jobs did not all checkpoint and stop before shutdown: {}", e.toString());
        }
        try {
            // Every job has ended, so every stream ends once it has sent what was pending and the end event.
            if (!initializer.awaitEventStreamsEnded(STREAM_DRAIN)) {
                LOG.warn("event streams had not all ended {} after the jobs stopped; closing them", STREAM_DRAIN);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        http.close();
        factoryCalls.shutdownNow();
        actors.terminate();
        try {
            actors.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("actor system did not terminate cleanly: {}", e.toString());
        }
    }

    private static byte[] openApiDocument() throws IOException {
        try (InputStream in = KdapackServer.class.getResourceAsStream("/openapi.yaml")) {
            if (in == null) {
                throw new IOException("openapi.yaml is missing from the classpath");
            }
            return in.readAllBytes();
        }
    }
}
