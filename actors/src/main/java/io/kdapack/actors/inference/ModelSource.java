package io.kdapack.actors.inference;

import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.ServedModel;
import io.kdapack.tokenizers.Tokenizers;
import io.kdapack.training.checkpoint.CheckpointStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/** Where the inference actor gets its engines: a model directory's newest checkpoint, and an engine for it. */
public interface ModelSource {

    /** The newest complete checkpoint of {@code model}, empty when it has none. */
    Optional<Path> latestCheckpoint(Path model) throws IOException;

    /** An engine for {@code checkpoint} of {@code model} (a {@link #latestCheckpoint} result). */
    InferenceEngine load(Path model, Path checkpoint, InferenceLimits limits) throws IOException;

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
