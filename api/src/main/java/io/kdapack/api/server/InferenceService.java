package io.kdapack.api.server;

import io.kdapack.actors.inference.InferenceActor;
import io.kdapack.actors.inference.InferenceGauges;
import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.actors.inference.ModelSource;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobSupervisor;
import io.kdapack.api.http.ApiException;
import io.kdapack.api.http.DataRoot;
import io.kdapack.actors.job.JobState;
import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.ServedModel;
import io.kdapack.training.checkpoint.CheckpointStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;

/**
 * The server's inference side: the {@link InferenceActor} (on the pinned compute dispatcher) and the catalogue of
 * what it can serve. A {@code model} name is a job id (the job's directory under the jobs directory: its newest
 * checkpoint, a newer one as soon as the job writes it) or a path under the data root naming a run or job directory
 * ({@link ServedModel#isServable}). Listing looks at the jobs directory and at most two levels under the data root,
 * and returns at most {@link #MAX_LISTED} models.
 *
 * <p>Live weights: a {@code model} naming a job of this server that is running serves that job's weights as of its
 * last applied optimizer step ({@link #target}), never half an update: the job's model stage copies them in a message
 * of its own, between steps ({@link JobManager.SnapshotWeights}). The copy is built into an engine on one builder
 * thread and cached per job while the job's step has not changed: a request asks the job with the cached step, and
 * the job copies nothing when it is still at that step. Memory: at most {@code max_models} cached live engines (least
 * recently used dropped first), each one copy of its job's weights (shown as {@code kdapack_inference_live_weight_bytes});
 * while a newer step's engine is built, that job's snapshot is one more copy, and an engine dropped from the cache lives
 * on only while requests that started on it run. A job that has ended is served from its checkpoints again.
 */
public final class InferenceService {
    static final int MAX_LISTED = 256;

    private final ActorRef<InferenceActor.Command> actor;
    private final InferenceGauges gauges;
    private final InferenceLimits limits;
    private final DataRoot dataRoot;
    private final Path jobsDir;
    private final ModelSource models;
    /** The jobs whose live weights are served; null to serve checkpoints only. */
    private final JobService jobs;
    /** Per job: its cached live engine, or the refresh in flight; least recently used first. Guarded by {@code this}. */
    private final LinkedHashMap<String, CompletableFuture<LiveEngine>> live = new LinkedHashMap<>(16, 0.75f, true);
    /** Builds live engines one at a time, so that at most one snapshot is being turned into an engine at once. */
    private final ExecutorService builder = Executors.newSingleThreadExecutor(Thread.ofPlatform()
            .name("live-engine-builder").daemon(true).factory());

    /**
     * One listed model: its name, its directory (null for a live job without checkpoints), its newest checkpoint's
     * step (-1: none) and, for a running job, the step of the live weights it serves (-1: not live).
     */
    public record ModelEntry(String id, Path directory, long step, long liveStep) {
    }

    /**
     * What a request is served from: a run or job directory's newest checkpoint ({@code engine} null), or a running
     * job's live weights ({@code engine}, of optimizer step {@code weightsStep}).
     */
    public record Target(Path directory, InferenceEngine engine, long weightsStep) {
    }

    private record LiveEngine(long step, InferenceEngine engine, long bytes) {
    }

    /** As the full constructor, serving checkpoints only (no live weights). */
    public InferenceService(ActorSystem<JobManager.Command> system, InferenceLimits limits, ModelSource models,
                            DataRoot dataRoot, Path jobsDir) {
        this(system, limits, models, dataRoot, jobsDir, null);
    }

    /** @param jobs the jobs of this server, whose live weights {@link #target} serves (null: checkpoints only) */
    public InferenceService(ActorSystem<JobManager.Command> system, InferenceLimits limits, ModelSource models,
                            DataRoot dataRoot, Path jobsDir, JobService jobs) {
        this.gauges = new InferenceGauges();
        this.limits = limits;
        this.dataRoot = dataRoot;
        this.jobsDir = jobsDir.toAbsolutePath().normalize();
        this.models = models;
        this.jobs = jobs;
        this.actor = system.systemActorOf(InferenceActor.create(limits, models, gauges), "inference",
                DispatcherSelector.fromConfig(JobSupervisor.COMPUTE_DISPATCHER));
    }

    /**
     * What {@code model} is served from: the live weights of a running job of that id, else the directory it names
     * ({@link #resolve}).
     *
     * @return fails with 409 for a job that has not applied an optimizer step yet (or is queued), 404 for a job
     *         forgotten meanwhile, 400 naming {@code model} when it names nothing servable
     */
    public CompletionStage<Target> target(String model) {
        if (jobs == null || !JobManager.JOB_ID.matcher(model).matches()) {
            return CompletableFuture.completedFuture(new Target(resolve(model), null, -1));
        }
        return jobs.get(model).thenCompose(handle -> {
            if (handle.isEmpty() || handle.get().status().state().isTerminal()) {
                forget(model);
                return CompletableFuture.completedFuture(new Target(resolve(model), null, -1));
            }
            return liveEngine(model).<Target>thenApply(e -> new Target(null, e.engine(), e.step()))
                    .exceptionallyCompose(failure -> afterEnd(model, failure));
        });
    }

    /**
     * A job that ended while its snapshot was asked (the ask then finds no model stage, or a job no longer running) is
     * served from its checkpoints; any other failure stands.
     */
    private CompletionStage<Target> afterEnd(String model, Throwable failure) {
        return jobs.get(model).thenApply(handle -> {
            if (handle.isPresent() && !handle.get().status().state().isTerminal()) {
                throw failure instanceof CompletionException c ? c : new CompletionException(failure);
            }
            forget(model);
            return new Target(resolve(model), null, -1);
        });
    }

    /** The cached engine of {@code job} if its step is current, else a new one (one refresh per job at a time). */
    private synchronized CompletableFuture<LiveEngine> liveEngine(String job) {
        CompletableFuture<LiveEngine> current = live.get(job);
        if (current != null && !current.isDone()) {
            return current; // a refresh is in flight: it answers with a step at least as new as one asked now
        }
        LiveEngine held = current != null && !current.isCompletedExceptionally() ? current.join() : null;
        CompletableFuture<LiveEngine> next = jobs.snapshotWeights(job, held == null ? -1 : held.step())
                .thenApplyAsync(snapshot -> snapshot.isUnchanged() ? held
                        : new LiveEngine(snapshot.step(), models.live(snapshot, limits), snapshot.bytes()), builder)
                .toCompletableFuture();
        live.put(job, next);
        while (live.size() > limits.maxModels()) {
            String eldest = live.keySet().iterator().next();
            if (eldest.equals(job)) {
                break;
            }
            live.remove(eldest);
        }
        next.whenComplete((engine, failure) -> {
            if (failure != null) {
                forget(job, next);
            }
            publishLiveBytes();
        });
        return next;
    }

    private synchronized void forget(String job) {
        if (live.remove(job) != null) {
            publishLiveBytes();
        }
    }

    private synchronized void forget(String job, CompletableFuture<LiveEngine> entry) {
        live.remove(job, entry);
    }

    private synchronized void publishLiveBytes() {
        long bytes = 0;
        for (CompletableFuture<LiveEngine> entry : live.values()) {
            if (entry.isDone() && !entry.isCompletedExceptionally()) {
                bytes += entry.join().bytes();
            }
        }
        gauges.setLiveWeightBytes(bytes);
    }

    public ActorRef<InferenceActor.Command> actor() {
        return actor;
    }

    public InferenceGauges gauges() {
        return gauges;
    }

    public InferenceLimits limits() {
        return limits;
    }

    /**
     * The directory {@code model} names.
     *
     * @throws ApiException 400 naming {@code model} when it names nothing servable
     */
    public Path resolve(String model) {
        if (JobManager.JOB_ID.matcher(model).matches()) {
            Path job = jobsDir.resolve(model);
            if (ServedModel.isServable(job)) {
                return job;
            }
        }
        Path dir = dataRoot.resolve(model, "model");
        if (!ServedModel.isServable(dir)) {
            throw ApiException.badRequest("model: unknown model '" + model + "' (neither a job with checkpoints nor "
                    + "a run directory under the data root; GET /v1/models lists them)", "model");
        }
        return dir;
    }

    /**
     * Everything {@link #target} serves: the running jobs of this server that have applied a step (live, with the
     * step of their weights now; -1 for none), then {@link #list}'s entries, each model once.
     */
    public CompletionStage<List<ModelEntry>> listing() {
        CompletionStage<List<io.kdapack.actors.job.JobHandle>> running = jobs == null
                ? CompletableFuture.completedFuture(List.of()) : jobs.list();
        return running.thenApply(handles -> {
            Map<String, Long> liveSteps = new LinkedHashMap<>();
            for (var handle : handles) {
                if (handle.status().state() == JobState.RUNNING && handle.status().step() > 0) {
                    liveSteps.put(handle.status().id(), handle.status().step());
                }
            }
            List<ModelEntry> stored;
            try {
                stored = list();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            List<ModelEntry> all = new ArrayList<>();
            Map<String, ModelEntry> storedJobs = new LinkedHashMap<>();
            for (ModelEntry entry : stored) {
                storedJobs.putIfAbsent(entry.id(), entry);
            }
            liveSteps.forEach((id, step) -> {
                ModelEntry onDisk = storedJobs.get(id);
                all.add(new ModelEntry(id, onDisk == null ? null : onDisk.directory(),
                        onDisk == null ? -1 : onDisk.step(), step));
            });
            for (ModelEntry entry : stored) {
                if (!liveSteps.containsKey(entry.id()) && all.size() < MAX_LISTED) {
                    all.add(entry);
                }
            }
            return all;
        });
    }

    /** Everything {@link #resolve} accepts that has a checkpoint, jobs first, each list sorted by name. */
    public List<ModelEntry> list() throws IOException {
        Map<Path, ModelEntry> found = new LinkedHashMap<>();
        if (Files.isDirectory(jobsDir)) {
            try (Stream<Path> jobs = Files.list(jobsDir)) {
                for (Path job : jobs.sorted().toList()) {
                    add(found, job.getFileName().toString(), job);
                }
            }
        }
        Path root = dataRoot.root();
        try (Stream<Path> candidates = Files.walk(root, 2)) {
            for (Path dir : candidates.filter(Files::isDirectory).sorted().toList()) {
                if (found.size() >= MAX_LISTED) {
                    break;
                }
                String name = root.relativize(dir).toString();
                if (!name.isEmpty()) {
                    add(found, name, dir);
                }
            }
        }
        return new ArrayList<>(found.values());
    }

    private static void add(Map<Path, ModelEntry> found, String name, Path dir) throws IOException {
        Path key = dir.toAbsolutePath().normalize();
        if (found.size() >= MAX_LISTED || found.containsKey(key) || !ServedModel.isServable(dir)) {
            return;
        }
        Optional<Path> checkpoint = ServedModel.latestCheckpoint(dir);
        checkpoint.ifPresent(c -> found.put(key, new ModelEntry(name, dir, CheckpointStore.stepOf(c), -1)));
    }
}
