package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.DataConfig;
import io.kdapack.core.loss.LossMode;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GradientAccumulationTest {
    private static final double FACTOR = 0.1;

    @Test
    void perMicroBatchMeanWeightsEachMicroBatchByItsOwnCountOverM(@TempDir Path dir) throws IOException {
        List<MicroBatch> batches = microBatches(dir, 3);
        GradientAccumulation acc = GradientAccumulation.of(LossMode.PER_MICROBATCH_MEAN, batches, 1, FACTOR);
        for (int m = 0; m < 3; m++) {
            MicroBatch b = batches.get(m);
            assertEquals(1.0 / b.lossTokens() / 3, acc.weights(m).tokenWeight(), 1e-15);
            assertEquals(FACTOR / b.mtpLossTokens() / 3, acc.weights(m).mtpTokenWeight(), 1e-15);
        }
    }

    @Test
    void perTokenWeightsEveryTokenByTheGlobalCount(@TempDir Path dir) throws IOException {
        List<MicroBatch> batches = microBatches(dir, 3);
        long total = batches.stream().mapToLong(MicroBatch::lossTokens).sum();
        GradientAccumulation acc = GradientAccumulation.of(LossMode.PER_TOKEN, batches, 1, FACTOR);
        for (int m = 0; m < 3; m++) {
            assertEquals(1.0 / total, acc.weights(m).tokenWeight(), 1e-15);
            // Megatron's MTPLossAutoScaler in per-token mode: the main loss's global count.
            assertEquals(FACTOR / total, acc.weights(m).mtpTokenWeight(), 1e-15);
        }
    }

    /**
     * The accumulated gradient is the gradient of the mode's objective: compared with the weighted sum of each
     * micro-batch's separately computed main and MTP gradients. Tolerance 1e-5 relative: fp32 gradient sums in a
     * different association.
     */
    @Test
    void accumulatedGradientIsTheGradientOfTheModesObjective(@TempDir Path dir) throws IOException {
        List<MicroBatch> batches = microBatches(dir, 3);
        long total = batches.stream().mapToLong(MicroBatch::lossTokens).sum();
        for (LossMode mode : LossMode.values()) {
            BigramModel model = new BigramModel(TrainingFixtures.TASK.vocabularySize(), 8, 1, 5, true);
            GradientAccumulation acc = GradientAccumulation.of(mode, batches, 1, FACTOR);
            double[] expected = new double[gradientSize(model)];
            double loggedSum = 0;
            long loggedCount = 0;
            double mtpMeans = 0;
            for (int m = 0; m < batches.size(); m++) {
                MicroBatch b = batches.get(m);
                double a = mode == LossMode.PER_TOKEN ? 1.0 / total : 1.0 / b.lossTokens() / batches.size();
                double c = mode == LossMode.PER_TOKEN ? FACTOR / total : FACTOR / b.mtpLossTokens() / batches.size();
                addScaled(expected, gradientOf(model, b, new LanguageModel.LossWeights(1, 0)), a);
                addScaled(expected, gradientOf(model, b, new LanguageModel.LossWeights(0, 1)), c);
            }
            model.parameters().forEach(Parameter::zeroGrad);
            for (int m = 0; m < batches.size(); m++) {
                LanguageModel.Output out = model.run(batches.get(m), acc.weights(m));
                acc.add(m, out);
                loggedSum += out.lossSum();
                loggedCount += out.lossCount();
                mtpMeans += out.mtpLossSum() / out.mtpLossCount();
            }
            assertTrue(acc.complete());
            assertEquals(loggedSum / loggedCount, acc.reduce(1, 0, 0).loss(), 0, "logged loss = Σ sums / Σ counts in both modes");
            assertEquals(mtpMeans / batches.size(), acc.reduce(1, 0, 0).mtpLoss(), 1e-12, "MTP loss: mean of per-micro-batch means");
            double[] actual = flatGradient(model);
            assertTrue(relativeError(actual, expected) < 1e-5, mode + ": " + relativeError(actual, expected));
        }
    }

    @Test
    void microBatchesGoInOrderAndTheMtpLossIsAbsentWithoutMtp(@TempDir Path dir) throws IOException {
        List<MicroBatch> batches = microBatches(dir, 2);
        GradientAccumulation acc = GradientAccumulation.of(LossMode.PER_TOKEN, batches, 0, FACTOR);
        LanguageModel.Output out = new LanguageModel.Output(new double[0], 2.0, 1, null, 0, 0);
        assertThrows(IllegalArgumentException.class, () -> acc.add(1, out));
        acc.add(0, out);
        assertNull(acc.reduce(1, 0, 0).mtpLoss());
        assertEquals(0, acc.weights(0).mtpTokenWeight());
        assertThrows(IllegalArgumentException.class, () -> GradientAccumulation.of(LossMode.PER_TOKEN, List.of(), 0, 0));
    }

    /**
     * A data-parallel rank's share, micro-batches [1, 3) of M = 4: its own added in order and only those, every other
     * one gathered exactly once, an MTP report exactly when the model has MTP, and the step complete only once all
     * four are recorded; each refusal names the micro-batch.
     */
    @Test
    void aRanksShareIsAddedInOrderAndTheOthersGatheredOnce() {
        long[] counts = {3, 5, 2, 4};
        long[] mtpCounts = {2, 4, 1, 3};
        LanguageModel.Output out = new LanguageModel.Output(new double[0], 6.0, 3, null, 1.5, 2);
        for (int depth : new int[] {0, 1}) {
            GradientAccumulation acc = GradientAccumulation.ofCounts(LossMode.PER_TOKEN, counts, mtpCounts, depth,
                    FACTOR, 1, 3);
            assertEquals(4, acc.microBatches());
            LossReport mtp = depth > 0 ? new LossReport(1, 1) : null;
            for (int own : new int[] {1, 2}) {
                assertEquals("micro-batch " + own + " is not another rank's unrecorded micro-batch",
                        assertThrows(IllegalArgumentException.class,
                                () -> acc.addGathered(own, new LossReport(1, 1), mtp)).getMessage(),
                        "a rank's own micro-batch, before it is added");
            }
            assertEquals("micro-batch 2 added out of order, expected 1",
                    assertThrows(IllegalArgumentException.class, () -> acc.add(2, out)).getMessage());
            acc.add(1, out);
            assertEquals("micro-batch 1 added out of order, expected 2",
                    assertThrows(IllegalArgumentException.class, () -> acc.add(1, out)).getMessage());
            acc.add(2, out);
            assertTrue(acc.localComplete());
            assertEquals("micro-batch 3 outside [1, 3)",
                    assertThrows(IllegalArgumentException.class, () -> acc.add(3, out)).getMessage());
            for (int m : new int[] {1, 2, 4, -1}) {
                assertEquals("micro-batch " + m + " is not another rank's unrecorded micro-batch",
                        assertThrows(IllegalArgumentException.class,
                                () -> acc.addGathered(m, new LossReport(1, 1), mtp)).getMessage());
            }
            assertEquals("micro-batch 0: an MTP report " + (depth > 0 ? "is needed" : "was given without MTP"),
                    assertThrows(IllegalArgumentException.class, () -> acc.addGathered(0, new LossReport(1, 1),
                            depth > 0 ? null : new LossReport(1, 1))).getMessage());
            acc.addGathered(0, new LossReport(2.0, 1), mtp);
            assertTrue(!acc.complete(), "micro-batch 3 is missing");
            acc.addGathered(3, new LossReport(4.0, 2), mtp);
            assertTrue(acc.complete());
            assertEquals("micro-batch 3 is not another rank's unrecorded micro-batch",
                    assertThrows(IllegalArgumentException.class,
                            () -> acc.addGathered(3, new LossReport(1, 1), mtp)).getMessage());
            assertEquals(List.of(new LossReport(2.0, 1), new LossReport(6.0, 3), new LossReport(6.0, 3),
                    new LossReport(4.0, 2)), acc.mainReports());
            assertEquals((2.0 + 6 + 6 + 4) / (1 + 3 + 3 + 2), acc.reduce(1, 0, 0).loss(), 1e-15);
        }
    }

    @Test
    void aFreshRankIsNeitherLocallyNorGloballyComplete() {
        GradientAccumulation acc = GradientAccumulation.ofCounts(LossMode.PER_MICROBATCH_MEAN, new long[] {1, 1},
                new long[] {0, 0}, 0, FACTOR, 0, 1);
        assertTrue(!acc.localComplete());
        assertTrue(!acc.complete());
        assertEquals(List.of(), acc.mainReports());
    }

    /** The rank's range [first, end) must lie in the step's M; the edges themselves are legal. */
    @Test
    void aRanksRangeAndAMicroBatchsMasksAreCheckedAtTheirEdges() {
        long[] counts = {3, 0, 2};
        long[] mtp = {0, 0, 0};
        assertEquals(3, GradientAccumulation.ofCounts(LossMode.PER_TOKEN, counts, mtp, 0, FACTOR, 0, 3).end());
        assertEquals(2, GradientAccumulation.ofCounts(LossMode.PER_TOKEN, counts, mtp, 0, FACTOR, 2, 3).first());
        for (int[] range : new int[][] {{-1, 2}, {1, 1}, {2, 1}, {0, 4}}) {
            assertEquals("micro-batches [" + range[0] + ", " + range[1] + ") outside the step's 3",
                    assertThrows(IllegalArgumentException.class, () -> GradientAccumulation.ofCounts(LossMode.PER_TOKEN,
                            counts, mtp, 0, FACTOR, range[0], range[1])).getMessage());
        }
        GradientAccumulation acc = GradientAccumulation.ofCounts(LossMode.PER_TOKEN, counts, mtp, 0, FACTOR, 0, 3);
        MicroBatch two = MicroBatchAssembler.of(1, 4, new int[4], new int[4], new float[] {1, 0, 1, 0}, new int[4],
                new int[] {1, 1, 1, 1}, 0);
        acc.requireMasks(2, two);
        for (int m : new int[] {-1, 3}) {
            assertEquals("micro-batch " + m + " outside [0, 3)", assertThrows(IllegalArgumentException.class,
                    () -> acc.requireMasks(m, two)).getMessage());
        }
        assertEquals("micro-batch 0 has 2 (MTP 0) loss tokens, its weights were fixed for 3 (MTP 0)",
                assertThrows(IllegalArgumentException.class, () -> acc.requireMasks(0, two)).getMessage());
    }

    private static List<MicroBatch> microBatches(Path dir, int count) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        MegatronSamples samples = MegatronSamples.open(data, DataConfig.defaults(), 40, 3, 2L * count);
        MicroBatchAssembler assembler = new MicroBatchAssembler(samples, 2, 1);
        return java.util.stream.IntStream.range(0, count).mapToObj(assembler::microBatch).toList();
    }

    private static double[] gradientOf(BigramModel model, MicroBatch batch, LanguageModel.LossWeights weights) {
        model.parameters().forEach(Parameter::zeroGrad);
        model.run(batch, weights);
        return flatGradient(model);
    }

    private static int gradientSize(BigramModel model) {
        return model.parameters().stream().mapToInt(Parameter::size).sum();
    }

    private static double[] flatGradient(BigramModel model) {
        double[] out = new double[gradientSize(model)];
        int at = 0;
        for (Parameter p : model.parameters()) {
            for (float g : p.grads()) {
                out[at++] = g;
            }
        }
        return out;
    }

    private static void addScaled(double[] into, double[] x, double scale) {
        for (int i = 0; i < into.length; i++) {
            into[i] += scale * x[i];
        }
    }

    private static double relativeError(double[] actual, double[] expected) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < actual.length; i++) {
            diff += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            norm += expected[i] * expected[i];
        }
        return Math.sqrt(diff / norm);
    }
}
