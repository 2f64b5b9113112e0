package io.kdapack.api.jobs;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.actors.cluster.parallel.ExchangeSettings;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankSpec;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.job.JobOutOfMemory;
import io.kdapack.api.http.ApiException;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.server.JobFactory;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.ModelFactory;
import io.kdapack.training.TrainingCorpora;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.pipeline.TrainerBackend;
import io.kdapack.training.pipeline.TrainingBackend;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The server's {@link JobFactory}: a job is the {@code kdapack train} loop ({@link TrainerBackend}) on the job's
 * configuration document. Each job owns {@code jobsDir/<id>/}:
 *
 * <pre>
 * job.json       {"config": every key of the bound configuration, "dataset": the resolved dataset prefix (or the
 *                blend as "W1 P1 W2 P2 …"), "prefixes": the resolved prefixes, "weights": their blend weights or null}
 * checkpoints/   step-NNNNNNNN as kdapack train writes them (train.checkpoint.dir is ignored for server jobs)
 * events.jsonl   every step event of every run, and each run's end event (EventJournal)
 * </pre>
 * {@code DELETE /v1/jobs/<id>?purge=true} removes the whole directory ({@link #purge}).
 *
 * <p>{@code train.data.prefix}, and every {@code train.data.blend[i].prefix}, resolves inside the data root
 * ({@link DataRoot#dataset}: no {@code ..} or symlink escapes, by the real path of the {@code .idx} and {@code .bin}
 * too, checked again on resume; the error names the key); the job records and opens the real prefixes. Without
 * either the job trains on the shipped demo set.
 */
public final class TrainingJobFactory implements JobFactory {
    static final String JOB_FILE = "job.json";
    static final String CHECKPOINTS = "checkpoints";
    static final String EVENTS = "events.jsonl";
    private static final String PURGED_PREFIX = ".purged-";
    private static final Pattern JOB_ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PREFIX_KEY = "train.data.prefix";

    private final DataRoot dataRoot;
    private final Path jobsDir;
    private final ModelFactory models;

    /** @param jobsDir where job directories live (created when missing) */
    public TrainingJobFactory(DataRoot dataRoot, Path jobsDir, ModelFactory models) throws IOException {
        this.dataRoot = dataRoot;
        this.jobsDir = Files.createDirectories(jobsDir).toAbsolutePath().normalize();
        this.models = models;
        removePurgeLeftovers();
    }

    @Override
    public TrainingBackend create(String jobId, JsonNode document) throws IOException {
        Path dir = jobDir(jobId);
        if (Files.exists(dir)) {
            throw new IllegalArgumentException("job " + jobId + " already exists in " + jobsDir);
        }
        KdapackConfig config = ConfigLoader.fromDocument(JSON.convertValue(document, new TypeReference<>() {
        }));
        TrainingCorpora corpora = TrainingCorpora.of(config.train().data(),
                (path, key) -> path == null ? DatasetPaths.trainPrefix(null) : dataRoot.dataset(path, key));
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("config", config.toMap());
        record.put("dataset", corpora.toString());
        record.put("prefixes", corpora.prefixes().stream().map(Path::toString).toList());
        record.put("weights", corpora.weights());
        Files.createDirectories(dir);
        SafeTensors.writeAtomically(dir.resolve(JOB_FILE), JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(record));
        return backend(dir, config, corpora);
    }

    @Override
    public TrainingBackend resume(String jobId) throws IOException {
        Recorded recorded = recorded(jobId);
        return backend(jobDir(jobId), recorded.config(), recorded.corpora());
    }

    @Override
    public RankSpec rankSpec(String jobId, int rank, ExchangeSettings exchange, ActorRef<RankEvent> listener)
            throws IOException {
        Recorded recorded = recorded(jobId);
        return new RankSpec(jobId, rank, recorded.config(), models, recorded.corpora(),
                jobDir(jobId).resolve(CHECKPOINTS), exchange, listener);
    }

    @Override
    public long totalSteps(String jobId) throws IOException {
        return recorded(jobId).config().train().steps();
    }

    private record Recorded(KdapackConfig config, TrainingCorpora corpora) {
    }

    /** A job's configuration and dataset from its {@code job.json}, the dataset checked again against the data root. */
    private Recorded recorded(String jobId) throws IOException {
        Path dir = jobDir(jobId);
        Path file = dir.resolve(JOB_FILE);
        if (!Files.isRegularFile(file)) {
            throw ApiException.notFound("no job " + jobId + " on disk (" + file + ")");
        }
        JsonNode record = JSON.readTree(file.toFile());
        KdapackConfig config = ConfigLoader.fromDocument(JSON.convertValue(record.get("config"), new TypeReference<>() {
        }));
        TrainingCorpora recorded = corpora(record);
        if (config.train().data().prefix() == null && config.train().data().blend() == null) {
            return new Recorded(config, recorded);
        }
        // Checked again: the files may have changed (or the data root moved) since the job was created.
        List<Path> checked = new ArrayList<>();
        for (Path prefix : recorded.prefixes()) {
            checked.add(dataRoot.dataset(prefix.toString(), PREFIX_KEY));
        }
        return new Recorded(config, new TrainingCorpora(checked, recorded.weights()));
    }

    @Override
    public int ranks(String jobId) throws IOException {
        return JSON.readTree(jobDir(jobId).resolve(JOB_FILE).toFile()).path("config").path("train")
                .path("data_parallel").asInt(1);
    }

    @Override
    public Path eventJournal(String jobId) {
        return jobDir(jobId).resolve(EVENTS);
    }

    /**
     * Jobs with a {@code job.json} whose newest complete checkpoint is before their last step, except those whose last
     * run ran out of memory (it would again) and those whose dataset is gone.
     */
    @Override
    public List<String> unfinishedJobs() {
        List<String> unfinished = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(jobsDir)) {
            for (Path dir : dirs.sorted().toList()) {
                Path file = dir.resolve(JOB_FILE);
                if (!JOB_ID.matcher(dir.getFileName().toString()).matches()) {
                    continue; // a purge in progress, or not a job
                }
                if (!Files.isRegularFile(file)) {
                    continue;
                }
                JsonNode record = JSON.readTree(file.toFile());
                long steps = record.path("config").path("train").path("steps").asLong();
                Path dataset = Path.of(record.path("dataset").asText());
                boolean datasetThere = Files.isRegularFile(IndexedDataset.idxPath(dataset))
                        && Files.isRegularFile(IndexedDataset.binPath(dataset));
                boolean outOfMemory = EventJournal.lastEnd(dir.resolve(EVENTS))
                        .map(end -> JobOutOfMemory.describes(end.error())).orElse(false);
                if (datasetThere && !outOfMemory && checkpointedStep(dir.resolve(CHECKPOINTS)) < steps) {
                    unfinished.add(dir.getFileName().toString());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("listing jobs in " + jobsDir, e);
        }
        return unfinished;
    }

    private TrainingBackend backend(Path dir, KdapackConfig config, TrainingCorpora corpora) {
        // The estimate reads the first corpus's index for its document counts (a blend's others are of the same order).
        return new EstimatedBackend(new TrainerBackend(config, models, corpora, dir.resolve(CHECKPOINTS)),
                JobMemoryModel.estimate(config, corpora.prefixes().getFirst()));
    }

    /** Removes the directory of a job that {@link #create} made but the server did not accept. */
    @Override
    public void discard(String jobId) throws IOException {
        purge(jobId);
    }

    /**
     * Removes {@code jobsDir/<id>/}: renamed first to a hidden {@code .purged-<id>-…} directory beside it (atomic, so
     * the job disappears whole and a crash mid-delete leaves no half job; the leftovers go at the next start), then
     * deleted. Confined to the jobs directory: the id is one path segment without dots, and nothing is followed
     * through a link (a link inside the directory is removed, not what it points to; a job directory that is itself a
     * link is refused).
     */
    @Override
    public boolean purge(String jobId) throws IOException {
        Path dir = jobDir(jobId);
        if (Files.isSymbolicLink(dir)) {
            throw new IllegalArgumentException("job " + jobId + ": " + dir + " is a symbolic link, not a job directory "
                    + "the server made; not purged");
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        Path doomed = jobsDir.resolve(PURGED_PREFIX + jobId + "-" + java.util.UUID.randomUUID());
        Files.move(dir, doomed, StandardCopyOption.ATOMIC_MOVE);
        deleteRecursively(doomed);
        return true;
    }

    /** Deletes {@code dir} and what is under it, links as links (Files.walk does not follow them). */
    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(file);
            }
        }
    }

    /** Removes what purges interrupted by a crash left behind. */
    private void removePurgeLeftovers() throws IOException {
        try (Stream<Path> entries = Files.list(jobsDir)) {
            for (Path left : entries.filter(p -> p.getFileName().toString().startsWith(PURGED_PREFIX)).toList()) {
                if (!Files.isSymbolicLink(left)) {
                    deleteRecursively(left);
                }
            }
        }
    }

    /** The corpora a job record names ({@code prefixes}/{@code weights}; records without them name one "dataset"). */
    private static TrainingCorpora corpora(JsonNode record) {
        JsonNode prefixes = record.path("prefixes");
        if (!prefixes.isArray()) {
            return TrainingCorpora.single(Path.of(record.get("dataset").asText()));
        }
        List<Path> paths = new ArrayList<>();
        prefixes.forEach(p -> paths.add(Path.of(p.asText())));
        JsonNode weights = record.path("weights");
        double[] w = null;
        if (weights.isArray()) {
            w = new double[weights.size()];
            for (int i = 0; i < w.length; i++) {
                w[i] = weights.get(i).asDouble();
            }
        }
        return new TrainingCorpora(paths, w);
    }

    private Path jobDir(String jobId) {
        if (!JOB_ID.matcher(jobId).matches()) {
            throw new IllegalArgumentException("job id '" + jobId + "' must match " + JOB_ID.pattern());
        }
        return jobsDir.resolve(jobId);
    }

    /** The step of the newest complete checkpoint ({@link CheckpointStore#latest}); 0 without one. */
    private static long checkpointedStep(Path checkpoints) throws IOException {
        return new CheckpointStore(checkpoints).latest().map(CheckpointStore::stepOf).orElse(0L);
    }
}
