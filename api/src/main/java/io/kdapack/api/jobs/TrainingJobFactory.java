package io.kdapack.api.jobs;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.job.JobOutOfMemory;
import io.kdapack.actors.pipeline.TrainingBackend;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.api.http.ApiException;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.server.JobFactory;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.checkpoint.CheckpointStore;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.ModelFactory;
import io.kdapack.training.pipeline.TrainerBackend;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The server's {@link JobFactory}: a job is the {@code kdapack train} loop ({@link TrainerBackend}) on the job's
 * configuration document. Each job owns {@code jobsDir/<id>/}:
 *
 * <pre>
 * job.json       {"config": every key of the bound configuration, "dataset": the resolved dataset prefix}
 * checkpoints/   step-NNNNNNNN as kdapack train writes them (train.checkpoint.dir is ignored for server jobs)
 * events.jsonl   every step event of every run, and each run's end event (EventJournal)
 * </pre>
 *
 * <p>{@code train.data.prefix} resolves inside the data root ({@link DataRoot#resolve}: no {@code ..} or symlink
 * escapes); without one the job trains on the shipped demo set.
 */
public final class TrainingJobFactory implements JobFactory {
    static final String JOB_FILE = "job.json";
    static final String CHECKPOINTS = "checkpoints";
    static final String EVENTS = "events.jsonl";
    private static final String PREFIX_KEY = "train.data.prefix";
    private static final Pattern JOB_ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final DataRoot dataRoot;
    private final Path jobsDir;
    private final ModelFactory models;

    /** @param jobsDir where job directories live (created when missing) */
    public TrainingJobFactory(DataRoot dataRoot, Path jobsDir, ModelFactory models) throws IOException {
        this.dataRoot = dataRoot;
        this.jobsDir = Files.createDirectories(jobsDir).toAbsolutePath().normalize();
        this.models = models;
    }

    @Override
    public TrainingBackend create(String jobId, JsonNode document) throws IOException {
        Path dir = jobDir(jobId);
        if (Files.exists(dir)) {
            throw new IllegalArgumentException("job " + jobId + " already exists in " + jobsDir);
        }
        KdapackConfig config = ConfigLoader.fromDocument(JSON.convertValue(document, new TypeReference<>() {
        }));
        String prefix = config.train().data().prefix();
        Path dataset = prefix == null ? DatasetPaths.trainPrefix(null) : dataRoot.resolve(prefix, PREFIX_KEY);
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("config", config.toMap());
        record.put("dataset", dataset.toString());
        Files.createDirectories(dir);
        SafeTensors.writeAtomically(dir.resolve(JOB_FILE), JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(record));
        return backend(dir, config, dataset);
    }

    @Override
    public TrainingBackend resume(String jobId) throws IOException {
        Path dir = jobDir(jobId);
        Path file = dir.resolve(JOB_FILE);
        if (!Files.isRegularFile(file)) {
            throw ApiException.notFound("no job " + jobId + " on disk (" + file + ")");
        }
        JsonNode record = JSON.readTree(file.toFile());
        KdapackConfig config = ConfigLoader.fromDocument(JSON.convertValue(record.get("config"), new TypeReference<>() {
        }));
        return backend(dir, config, Path.of(record.get("dataset").asText()));
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

    private TrainingBackend backend(Path dir, KdapackConfig config, Path dataset) {
        return new EstimatedBackend(new TrainerBackend(config, models, dataset, dir.resolve(CHECKPOINTS)),
                JobMemoryModel.estimate(config, dataset));
    }

    /** Removes the directory of a job that {@link #create} made but the server did not accept. */
    @Override
    public void discard(String jobId) throws IOException {
        Path dir = jobDir(jobId);
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path file : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(file);
                }
            }
        }
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
