package io.kdapack.core.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.model.LanguageModel.LossWeights;
import io.kdapack.core.model.LanguageModel.Output;
import io.kdapack.core.nn.Parameter;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The mission's property at model level: a packed micro-batch gives the same per-token losses (main and MTP) and the
 * same weight gradients as each of its documents run alone, with KDA (grouped value heads), the short convolutions,
 * the MLA mask and restarted RoPE positions, and MTP all active. Tolerance 1e-5 relative (the bar): packing
 * only changes the order of float32 sums over tokens (weight gradients), so the observed error is ~1e-7.
 */
class HybridModelPackingTest {
    private static final double TOLERANCE = 1e-5;
    /** Per-token weights shared by the packed run and the alone runs, so that gradients add up across documents. */
    private static final LossWeights WEIGHTS = new LossWeights(1.0 / 40, 0.1 / 35);

    /** Two rows of 16: documents 5 + 7 + padding 4, and 9 + 1 + 6 (a one-token document). */
    private static TinyModels.Packed packed() {
        return TinyModels.packed(11, 16, new int[] {5, 7}, new int[] {9, 1, 6});
    }

    @Test
    void packedBatchEqualsEachDocumentAlone() {
        for (var config : List.of(TinyModels.config(), TinyModels.config(-3.0, true, 1))) {
            HybridModel model = TinyModels.model(config, true, 3, 2);
            TinyModels.Packed packed = packed();
            TinyModels.zeroGrads(model);
            Output together = model.run(packed.batch(), WEIGHTS);
            List<float[]> packedGrads = TinyModels.grads(model);

            TinyModels.zeroGrads(model);
            double[] aloneLoss = new double[together.perTokenLoss().length];
            double[] aloneMtp = new double[aloneLoss.length];
            double sum = 0;
            long count = 0;
            for (int n = 0; n < packed.docs().size(); n++) {
                Output alone = model.run(packed.alone(n), WEIGHTS); // gradients accumulate over the documents
                for (int i = 0; i < packed.docs().get(n).length(); i++) {
                    aloneLoss[packed.index(n, i)] = alone.perTokenLoss()[i];
                    aloneMtp[packed.index(n, i)] = alone.mtpPerTokenLoss()[i];
                }
                sum += alone.lossSum();
                count += alone.lossCount();
            }
            String label = "lower_bound " + config.kda().lowerBound() + ", tied " + config.tieWordEmbeddings();
            assertTrue(TinyModels.relativeError(together.perTokenLoss(), aloneLoss) <= TOLERANCE, label);
            assertTrue(TinyModels.relativeError(together.mtpPerTokenLoss(), aloneMtp) <= TOLERANCE, label);
            assertEquals(count, together.lossCount());
            assertEquals(sum, together.lossSum(), TOLERANCE * sum);
            assertGradientsEqual(model, packedGrads, TinyModels.grads(model), TOLERANCE, label);
        }
    }

    /** Padding rows and padding tails add no loss and no gradient. */
    @Test
    void paddingRowsGiveZeroLossAndNoGradient() {
        HybridModel model = TinyModels.model(TinyModels.config(), true, 5, 1);
        TinyModels.Packed withPadding = TinyModels.packed(12, 12, new int[] {4, 6}, new int[] {});
        TinyModels.Packed alone = TinyModels.packed(12, 12, new int[] {4, 6});
        TinyModels.zeroGrads(model);
        Output padded = model.run(withPadding.batch(), WEIGHTS);
        List<float[]> paddedGrads = TinyModels.grads(model);
        TinyModels.zeroGrads(model);
        Output single = model.run(alone.batch(), WEIGHTS);

        double[] paddingRow = Arrays.copyOfRange(padded.perTokenLoss(), 12, 24);
        assertTrue(Arrays.stream(paddingRow).allMatch(v -> v == 0.0), Arrays.toString(paddingRow));
        assertTrue(Arrays.stream(Arrays.copyOfRange(padded.perTokenLoss(), 10, 12)).allMatch(v -> v == 0.0));
        assertEquals(single.lossCount(), padded.lossCount());
        assertEquals(single.mtpLossCount(), padded.mtpLossCount());
        assertTrue(TinyModels.relativeError(Arrays.copyOf(padded.perTokenLoss(), 12), single.perTokenLoss()) <= TOLERANCE);
        assertGradientsEqual(model, paddedGrads, TinyModels.grads(model), TOLERANCE, "padding row");

        // A batch of padding only: loss 0 over 0 tokens, gradients exactly 0.
        TinyModels.zeroGrads(model);
        Output empty = model.run(TinyModels.packed(13, 8, new int[] {}).batch(), WEIGHTS);
        assertEquals(0, empty.lossCount());
        assertEquals(0.0, empty.lossSum());
        for (Parameter p : model.parameters()) {
            for (float g : p.grads()) {
                assertEquals(0f, g, p.name());
            }
        }
    }

    /**
     * With isolation off, KDA and the convolutions run over whole rows, so a document that follows another one sees
     * its predecessor: its losses change. The first document of each row is unaffected (causality). This is the test
     * that fails if the flag does nothing.
     */
    @Test
    void withoutIsolationLaterDocumentsLeak() {
        HybridModel model = TinyModels.model(TinyModels.config(), false, 3, 2);
        TinyModels.Packed packed = packed();
        Output together = model.run(packed.batch(), null);
        for (int n = 0; n < packed.docs().size(); n++) {
            Output alone = model.run(packed.alone(n), null);
            int length = packed.docs().get(n).length();
            double[] inPack = new double[length];
            for (int i = 0; i < length; i++) {
                inPack[i] = together.perTokenLoss()[packed.index(n, i)];
            }
            double err = TinyModels.relativeError(inPack, alone.perTokenLoss());
            if (packed.docs().get(n).start() == 0) {
                assertTrue(err <= TOLERANCE, "document " + n + " starts its row: no predecessor, error " + err);
            } else {
                assertTrue(err > 1e-3, "document " + n + " follows another one in its row: it must see it, error "
                        + err);
            }
        }
    }

    static void assertGradientsEqual(HybridModel model, List<float[]> actual, List<float[]> expected, double tolerance,
                                     String label) {
        List<Parameter> parameters = model.parameters();
        for (int i = 0; i < parameters.size(); i++) {
            double err = TinyModels.relativeError(actual.get(i), expected.get(i));
            assertTrue(err <= tolerance, label + ": gradient of " + parameters.get(i).name() + " differs by " + err);
        }
    }
}
