package io.kdapack.api.server;

import io.kdapack.actors.inference.InferenceActor;
import io.kdapack.actors.inference.InferenceGauges;
import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.actors.inference.ModelSource;
import io.kdapack.actors.job.JobManager;
import io.kdapack.actors.job.JobSupervisor;
import io.kdapack.api.http.ApiException;
import io.kdapack.api.http.DataRoot;
import io.kdapack.inference.ServedModel;
import io.kdapack.training.checkpoint.CheckpointStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
 */
public final class InferenceService {
    static final int MAX_LISTED = 256;

    private final ActorRef<InferenceActor.Command> actor;
    private final InferenceGauges gauges;
    private final InferenceLimits limits;
    private final DataRoot dataRoot;
    private final Path jobsDir;

    /** One listed model: its name, its directory and its newest checkpoint's step. */
    public record ModelEntry(String id, Path directory, long step) {
    }

    public InferenceService(ActorSystem<JobManager.Command> system, InferenceLimits limits, ModelSource models,
                            DataRoot dataRoot, Path jobsDir) {
        this.gauges = new InferenceGauges();
        this.limits = limits;
        this.dataRoot = dataRoot;
        this.jobsDir = jobsDir.toAbsolutePath().normalize();
        this.actor = system.systemActorOf(InferenceActor.create(limits, models, gauges), "inference",
                DispatcherSelector.fromConfig(JobSupervisor.COMPUTE_DISPATCHER));
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
        checkpoint.ifPresent(c -> found.put(key, new ModelEntry(name, dir, CheckpointStore.stepOf(c))));
    }
}
