package io.kdapack.training;

import io.kdapack.config.TrainConfig;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.ModelConfig;

/** Builds the model a {@link Trainer} trains; the weights must depend on the arguments alone. */
@FunctionalInterface
public interface ModelFactory {

    /**
     * @param model the architecture
     * @param train the run: {@code seed} initialises the weights, {@code isolation} false builds the same model
     *              without document isolation (for comparison), {@code threads} and {@code backend} say where it
     *              computes (results must not depend on them)
     */
    LanguageModel create(ModelConfig model, TrainConfig train);
}
