package io.kdapack.api.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kdapack.actors.cluster.ClusterJobManager;
import io.kdapack.actors.cluster.ClusterNode;
import io.kdapack.actors.cluster.EventTopic;
import io.kdapack.actors.cluster.JobDirectory;
import io.kdapack.actors.cluster.JobEventMessage;
import io.kdapack.actors.cluster.WorkerAgent;
import io.kdapack.actors.cluster.parallel.ParallelTransport;
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
import io.kdapack.config.ClusterConfig;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.ClusterSingleton;
import org.apache.pekko.cluster.typed.ClusterSingletonSettings;
import org.apache.pekko.cluster.typed.SingletonActor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running server: the job actors, the HTTP API in front of them, and the metrics registry. {@link #close}
 * shuts down gracefully: running jobs checkpoint and stop, then HTTP and the actors stop.
 *
 * <p>With {@code cluster.enabled} the server is a Pekko Cluster member (docs/cluster.md): its roles decide what it
 * starts. Every member runs the cluster's {@link EventTopic} and a proxy of the {@link JobDirectory} singleton (which
 * lives on the api members); a {@code worker} runs jobs on its own {@link JobManager} for the directory
 * ({@link WorkerAgent}); an {@code api} member serves HTTP through a {@link ClusterJobManager}, so that every job of the
 * cluster is reachable from it. A worker alone serves no HTTP ({@link #address} is null).
 */
public final class KdapackServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KdapackServer.class);

    private final ActorSystem<JobManager.Command> actors;
    private final ExecutorService factoryCalls;
    private final HttpApiServer http;
    private final JobService jobs;
    /** The jobs that run in this JVM (the same service as {@link #jobs} unless this is an api member of a cluster). */
    private final JobService localJobs;
    private final Duration shutdownWait;
    private final HttpApiInitializer initializer;
    private final boolean clustered;
    private boolean closed;
    /** Longest a shutdown waits for event streams to deliver what was pending (a batch interval is at most 1 h, but a
     *  stream's default is 1 s; a client that reads nothing is not waited for longer than this). */
    private static final Duration STREAM_DRAIN = Duration.ofSeconds(5);

    private KdapackServer(ActorSystem<JobManager.Command> actors, ExecutorService factoryCalls, HttpApiServer http,
                          JobService jobs, JobService localJobs, Duration shutdownWait, HttpApiInitializer initializer,
                          boolean clustered) {
        this.initializer = initializer;
        this.localJobs = localJobs;
        this.clustered = clustered;
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
        return start(settings, token, factory, inferenceLimits, jobsDir, ClusterConfig.defaults());
    }

    /**
     * As {@link #start(ServerSettings, String, JobFactory, InferenceLimits, Path)}, as a member of the cluster
     * {@code cluster} describes when it is enabled; {@code jobsDir} must then be a directory every member sees.
     *
     * @throws io.kdapack.config.ConfigException naming the {@code cluster} key at fault when the member cannot start
     *                                           (a port in use, no seed to join within the join timeout)
     */
    public static KdapackServer start(ServerSettings settings, String token, JobFactory factory,
                                      InferenceLimits inferenceLimits, Path jobsDir, ClusterConfig cluster)
            throws IOException, InterruptedException {
        byte[] openApi = openApiDocument();
        // Shutdown order is ours (jobs checkpoint, then HTTP, then actors, whose coordinated shutdown leaves the
        // cluster before remoting stops): Pekko's own JVM hooks would run concurrently with it. Both kinds are off:
        // CoordinatedShutdown's would stop the actors before the jobs could checkpoint, and Artery's (which waits only
        // for hooks registered through CoordinatedShutdown, none here) would close every connection the moment the
        // JVM is asked to stop, so that the other members saw this one unreachable instead of leaving, and the split
        // brain resolver could down the last of them (docs/cluster.md, "Failure").
        // Pekko's timer wheel ticks whether or not a timeout is due: at its default 10 ms, about 1 % of a core on
        // this 2-core VM, idle or not, and a wakeup on a trainer's core 100 times a second. The server's timeouts
        // are 0.3 s and more, so 100 ms ticks (a timeout fires up to one tick late) lose nothing.
        // A job that runs out of heap fails alone: its stages turn OutOfMemoryError into an ordinary failure
        // (JobOutOfMemory) before Pekko sees it. A fatal error anywhere else leaves the process in an unknown state,
        // so Pekko's exit on it stays on, stated here rather than left to the default.
        Config config = ConfigFactory.parseString("""
                        pekko.jvm-shutdown-hooks = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        pekko.scheduler.tick-duration = 100ms
                        pekko.jvm-exit-on-fatal-error = on
                        """)
                .withFallback(ConfigFactory.load());
        // A worker's rank runners send gradient chunks on Artery's large-message lane (docs/cluster.md, "Data parallel").
        Config actorConfig = cluster.enabled() ? ClusterNode.pekkoConfig(cluster)
                .withFallback(ParallelTransport.artery(config.getBytes("kdapack.parallel.chunk-bytes")))
                .withFallback(config) : config;
        ServerLimits limits = settings.limits();
        var admission = new Admission(limits.memoryBudget(), limits.maxRunningJobs(), limits.maxQueuedJobs());
        var manager = JobManager.create(settings.pipeline(), settings.retainFinished(), admission);
        ActorSystem<JobManager.Command> actors = cluster.enabled()
                ? ClusterNode.start(cluster, () -> ActorSystem.create(manager, ClusterNode.SYSTEM_NAME, actorConfig))
                : ActorSystem.create(manager, ClusterNode.SYSTEM_NAME, actorConfig);
        ExecutorService factoryCalls = Executors.newFixedThreadPool(2, Thread.ofPlatform().name("job-factory-", 0)
                .daemon(true).factory());
        try {
            var localJobs = new JobService(actors, actors.scheduler(), factory, factoryCalls, settings.askTimeout());
            Duration shutdownWait = settings.pipeline().storeTimeout().plus(settings.pipeline().stepTimeout());
            JobService jobs = localJobs;
            if (cluster.enabled()) {
                ActorRef<JobManager.Command> front = joinCluster(actors, cluster, factory, localJobs,
                        settings.askTimeout());
                if (front == null) {
                    LOG.info("cluster member {} up with roles {}; no api role, so no HTTP",
                            Cluster.get(actors).selfMember().address(), cluster.roles());
                    return new KdapackServer(actors, factoryCalls, null, localJobs, localJobs, shutdownWait, null, true);
                }
                jobs = new JobService(front, actors.scheduler(), factory, factoryCalls, settings.askTimeout());
            }
            // Live weights are served for the jobs this JVM runs (localJobs); another member's job serves its checkpoints.
            var inference = new InferenceService(actors, inferenceLimits, ModelSource.DIRECTORIES,
                    new DataRoot(settings.dataRoot()), jobsDir, localJobs);
            var metrics = new ServerMetrics();
            metrics.watch(inference.gauges());
            var initializer = new HttpApiInitializer(jobs, metrics, token, settings.maxBodyBytes(), openApi,
                    settings.eventBatch(), limits, inference);
            var http = HttpApiServer.start(settings.bind(), settings.port(), initializer);
            return new KdapackServer(actors, factoryCalls, http, jobs, localJobs, shutdownWait, initializer,
                    cluster.enabled());
        } catch (InterruptedException | RuntimeException e) {
            actors.terminate();
            factoryCalls.shutdownNow();
            throw e;
        }
    }

    /**
     * Starts what this member's roles ask for; returns the job manager the HTTP API talks to (null without the api
     * role).
     */
    private static ActorRef<JobManager.Command> joinCluster(ActorSystem<JobManager.Command> actors, ClusterConfig cluster,
                                                          JobFactory factory, JobService localJobs, Duration askTimeout) {
        ActorRef<Topic.Command<JobEventMessage>> topic = actors.systemActorOf(EventTopic.create(), "job-events",
                Props.empty());
        ActorRef<JobDirectory.Command> directory = ClusterSingleton.get(actors).init(SingletonActor.of(
                        Behaviors.supervise(JobDirectory.create(askTimeout, factory::eventJournal, topic))
                                .onFailure(SupervisorStrategy.restart()), "job-directory")
                .withSettings(ClusterSingletonSettings.create(actors).withRole(ClusterConfig.ROLE_API)));
        if (cluster.hasRole(ClusterConfig.ROLE_WORKER)) {
            actors.systemActorOf(WorkerAgent.create(new LocalJobsAdapter(localJobs, factory), actors, topic,
                    askTimeout), "worker",
                    Props.empty());
        }
        return cluster.hasRole(ClusterConfig.ROLE_API) ? actors.systemActorOf(
                ClusterJobManager.create(directory, topic, factory::eventJournal, id -> ranks(factory, id), askTimeout),
                "cluster-jobs",
                Props.empty()) : null;
    }

    private static int ranks(JobFactory factory, String jobId) {
        try {
            return factory.ranks(jobId);
        } catch (Exception e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Where HTTP listens; null for a cluster member without the api role. */
    public InetSocketAddress address() {
        return http == null ? null : http.address();
    }

    /** This member's cluster address ({@code pekko://kdapack@host:port}), or null for a server on its own. */
    public String clusterAddress() {
        return clustered ? Cluster.get(actors).selfMember().address().toString() : null;
    }

    /**
     * Completes when the actor system has terminated: after {@link #close}, or, for a cluster member, when the cluster
     * downed it (the split brain resolver, or a member that was removed); the process should then exit.
     */
    public CompletionStage<Done> whenTerminated() {
        return actors.getWhenTerminated();
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
            // In a cluster, an api member's jobs run on the workers and go on; only the jobs of this JVM stop. A member
            // the cluster downed has no actors left to ask.
            if (!actors.whenTerminated().isCompleted()) {
                localJobs.checkpointAndStopAll(shutdownWait).toCompletableFuture()
                    .get(shutdownWait.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (Exception e) {
            LOG.warn("jobs did not all checkpoint and stop before shutdown: {}", e.toString());
        }
        try {
            // Every job has ended, so every stream ends once it has sent what was pending and the end event. An api
            // member's streams follow jobs elsewhere, which go on: their clients reconnect to another api member.
            if (initializer != null && !clustered && !initializer.awaitEventStreamsEnded(STREAM_DRAIN)) {
                LOG.warn("event streams had not all ended {} after the jobs stopped; closing them", STREAM_DRAIN);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (http != null) {
            http.close();
        }
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
