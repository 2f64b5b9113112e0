package io.kdapack.inference;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.backend.Backends;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.training.checkpoint.CheckpointStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * A trained model loaded for inference from a run directory ({@code kdapack train}'s: {@code config.json} and
 * {@code checkpoints/step-N/}) or a server job's directory ({@code job.json} with the configuration under
 * {@code "config"}, and {@code checkpoints/}). The weights are those of the newest complete checkpoint, or of a
 * chosen step, read with the training loop's checkpoint code.
 *
 * @param directory  the run or job directory
 * @param config     the configuration the run trained with
 * @param model      the model with the checkpoint's weights, KDA on {@code train.backend} (CPU: chunked kernels)
 * @param step       the checkpoint's step
 * @param checkpoint the checkpoint directory read
 */
public record ServedModel(Path directory, KdapackConfig config, HybridModel model, long step, Path checkpoint) {
    static final String RUN_CONFIG = "config.json";
    static final String JOB_FILE = "job.json";
    static final String CHECKPOINTS = "checkpoints";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** True when {@code dir} looks like something {@link #load} reads (a configuration and a checkpoint folder). */
    public static boolean isServable(Path dir) {
        return (Files.isRegularFile(dir.resolve(RUN_CONFIG)) || Files.isRegularFile(dir.resolve(JOB_FILE)))
                && Files.isDirectory(dir.resolve(CHECKPOINTS));
    }

    /** The newest complete checkpoint of a run or job directory, empty when it has none yet. */
    public static java.util.Optional<Path> latestCheckpoint(Path directory) throws IOException {
        return new CheckpointStore(directory.resolve(CHECKPOINTS)).latest();
    }

    /**
     * @param step    the checkpoint step to load, or null for the newest
     * @param threads KDA threads (0: all processors)
     * @throws IOException naming the missing or unreadable file, or the step that has no checkpoint
     */
    public static ServedModel load(Path directory, Long step, int threads) throws IOException {
        KdapackConfig config = readConfig(directory);
        CheckpointStore store = new CheckpointStore(directory.resolve(CHECKPOINTS));
        Path checkpoint;
        if (step == null) {
            checkpoint = store.latest().orElseThrow(() -> new IOException(directory.resolve(CHECKPOINTS)
                    + ": no complete checkpoint"));
        } else {
            checkpoint = directory.resolve(CHECKPOINTS).resolve(CheckpointStore.directoryName(step));
            if (!Files.isDirectory(checkpoint)) {
                throw new IOException("--step " + step + ": no checkpoint " + checkpoint + " (have: "
                        + store.checkpoints().stream().map(p -> String.valueOf(CheckpointStore.stepOf(p))).toList()
                        + ")");
            }
        }
        int kdaThreads = threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
        HybridModel model = new HybridModel(config.model(),
                Backends.select(config.train().backend(), kdaThreads),
                config.train().isolation());
        CheckpointStore.load(checkpoint).restoreInto(model.parameters());
        return new ServedModel(directory, config, model, CheckpointStore.stepOf(checkpoint), checkpoint);
    }

    private static KdapackConfig readConfig(Path directory) throws IOException {
        Path runConfig = directory.resolve(RUN_CONFIG);
        Path jobFile = directory.resolve(JOB_FILE);
        JsonNode document;
        Path source;
        if (Files.isRegularFile(runConfig)) {
            source = runConfig;
            document = JSON.readTree(runConfig.toFile());
        } else if (Files.isRegularFile(jobFile)) {
            source = jobFile;
            document = JSON.readTree(jobFile.toFile()).path("config");
        } else {
            throw new IOException(directory + ": neither " + RUN_CONFIG + " (a kdapack train run) nor " + JOB_FILE
                    + " (a server job)");
        }
        try {
            return ConfigLoader.fromDocument(JSON.convertValue(document, new TypeReference<Map<String, Object>>() {
            }));
        } catch (IllegalArgumentException e) {
            throw new IOException(source + ": " + e.getMessage(), e);
        }
    }
}
