package io.kdapack.training;

import io.kdapack.core.backend.Backends;
import io.kdapack.core.model.HybridModel;

/** The production {@link ModelFactory}: the hybrid KDA model of architecture §3. */
public final class HybridModels {
    /**
     * A {@link HybridModel} with the KDA backend of {@code train.backend} ({@link Backends}: {@code auto} falls back to
     * the chunked CPU kernels on {@code train.threads} threads, 0 = all processors), document isolation as
     * {@code train.isolation}, weights initialised from {@code train.seed}.
     */
    public static final ModelFactory FACTORY = (model, train) -> {
        int threads = train.threads() > 0 ? train.threads() : Runtime.getRuntime().availableProcessors();
        HybridModel hybrid = new HybridModel(model, Backends.select(train.backend(), threads),
                train.isolation());
        hybrid.initialize(train.seed());
        return hybrid;
    };

    private HybridModels() {
    }
}
