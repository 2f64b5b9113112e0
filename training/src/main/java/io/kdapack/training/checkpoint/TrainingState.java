package io.kdapack.training.checkpoint;

import java.util.Map;
import java.util.TreeMap;

/**
 * Where a training run stands, stored in a checkpoint's {@code state.json}: enough, with the weights and the
 * optimizer state, to continue so that the following losses are bit-identical to an uninterrupted run.
 *
 * @param step            optimizer steps completed
 * @param consumedSamples dataset indices consumed so far (Megatron's {@code consumed_train_samples}); the next
 *                        global batch starts at this index of the shuffled sample order
 * @param configHash      fingerprint of the configuration that produced the run, so that a resume with a different
 *                        configuration can be refused
 * @param rng             random generator states by name, serialised by their owners (empty when the run draws no
 *                        random numbers after initialisation)
 */
public record TrainingState(long step, long consumedSamples, String configHash, Map<String, String> rng) {

    public TrainingState {
        if (step < 0) {
            throw new IllegalArgumentException("step must be >= 0, got " + step);
        }
        if (consumedSamples < 0) {
            throw new IllegalArgumentException("consumedSamples must be >= 0, got " + consumedSamples);
        }
        if (configHash == null) {
            throw new IllegalArgumentException("configHash must not be null");
        }
        rng = java.util.Collections.unmodifiableMap(new TreeMap<>(rng));
    }
}
