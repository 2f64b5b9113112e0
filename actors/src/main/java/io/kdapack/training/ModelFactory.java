package io.kdapack.training;

import io.kdapack.config.ModelConfig;
import io.kdapack.core.model.LanguageModel;

/** Builds the model a {@link Trainer} trains; the weights must depend on the arguments alone. */
@FunctionalInterface
public interface ModelFactory {

    /**
     * @param config    the architecture
     * @param seed      seed of the weight initialisation ({@code train.seed})
     * @param isolation reset the recurrent and convolution state at document boundaries ({@code train.isolation});
     *                  false builds the same model without document isolation, for comparison
     */
    LanguageModel create(ModelConfig config, long seed, boolean isolation);
}
