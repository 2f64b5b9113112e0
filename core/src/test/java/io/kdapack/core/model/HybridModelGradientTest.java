package io.kdapack.core.model;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.model.LanguageModel.LossWeights;
import io.kdapack.core.model.LanguageModel.Output;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.nn.Parameter;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

/**
 * The whole model's gradients (embedding, KDA, MLA, MLPs, norms, LM head, MTP) against central differences of the
 * weighted loss {@code Σ w·ce + Σ w_mtp·ce_mtp}, on a packed batch with padding and documents of several lengths.
 */
class HybridModelGradientTest {
    /**
     * Step 1e-2 along a unit direction per tensor. The loss (a sum over ~25 tokens, ~80) is computed from float32
     * activations, so its round-off (~1e-5 absolute) over 2h contributes ~5e-4 relative to ‖g‖, truncation ~1e-4;
     * the largest observed error is 2.4e-3 (the q/k convolution weights). A wrong term gives O(1).
     */
    private static final double TOLERANCE = 1e-2;
    private static final float STEP = 1e-2f;
    private static final LossWeights WEIGHTS = new LossWeights(1.0, 0.5);

    @Test
    void gradientsMatchFiniteDifferences() {
        for (ModelConfig config : new ModelConfig[] {TinyModels.config(), TinyModels.config(-3.0, true, 1)}) {
            HybridModel model = TinyModels.model(config, true, 21, 1);
            MicroBatch batch = TinyModels.packed(22, 12, new int[] {5, 6}, new int[] {3, 7, 2}).batch();
            TinyModels.zeroGrads(model);
            model.run(batch, WEIGHTS);
            DoubleSupplier loss = () -> {
                Output out = model.run(batch, null);
                return WEIGHTS.tokenWeight() * out.lossSum() + WEIGHTS.mtpTokenWeight() * out.mtpLossSum();
            };
            long seed = 0;
            for (Parameter p : model.parameters()) {
                double error = DirectionalCheck.error(p.name(), p.grads(), p.values(), loss, STEP, seed++);
                assertTrue(error < TOLERANCE, p.name() + " (tied " + config.tieWordEmbeddings() + "): error " + error
                        + " relative to the gradient norm");
            }
        }
    }
}
