package io.kdapack.actors.inference;

import io.kdapack.config.KdapackConfig;
import io.kdapack.core.backend.Backends;
import io.kdapack.core.model.HybridModel;
import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.ServedModel;
import io.kdapack.tokenizers.Tokenizers;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.pipeline.WeightSnapshot;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where the inference actor gets its engines: a model directory's newest checkpoint, and an engine for it; or an engine
 * around a running job's weight snapshot.
 */
public interface ModelSource {

    /** The newest complete checkpoint of {@code model}, empty when it has none. */
    Optional<Path> latestCheckpoint(Path model) throws IOException;

    /** An engine for {@code checkpoint} of {@code model} (a {@link #latestCheckpoint} result). */
    InferenceEngine load(Path model, Path checkpoint, InferenceLimits limits) throws IOException;

    /**
     * An engine around a running job's weights ({@link WeightSnapshot}, not {@link WeightSnapshot#isUnchanged}): the
     * job's model built on its {@code train.backend} and the snapshot copied into it (the engine then holds the only
     * copy; the snapshot may be dropped).
     */
    default InferenceEngine live(WeightSnapshot snapshot, InferenceLimits limits) {
        KdapackConfig config = snapshot.config();
        int threads = limits.threads() > 0 ? limits.threads() : Runtime.getRuntime().availableProcessors();
        HybridModel model = new HybridModel(config.model(), Backends.select(config.train().backend(), threads),
                config.train().isolation());
        snapshot.restoreInto(model.parameters());
        return new InferenceEngine(model, Tokenizers.forModel(config.model()), threads, limits.prefillChunk(),
                limits.maxContext());
    }

    /** Run and job directories read with {@link ServedModel}. */
    ModelSource DIRECTORIES = new ModelSource() {
        @Override
        public Optional<Path> latestCheckpoint(Path model) throws IOException {
            return ServedModel.latestCheckpoint(model);
        }

        @Override
        public InferenceEngine load(Path model, Path checkpoint, InferenceLimits limits) throws IOException {
            ServedModel served = ServedModel.load(model, CheckpointStore.stepOf(checkpoint), limits.threads());
            int threads = limits.threads() > 0 ? limits.threads() : Runtime.getRuntime().availableProcessors();
            return new InferenceEngine(served.model(), Tokenizers.forModel(served.config().model()), threads,
                    limits.prefillChunk(), limits.maxContext());
        }
    };
}
