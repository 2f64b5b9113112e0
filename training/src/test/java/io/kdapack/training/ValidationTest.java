package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.KdapackConfig;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Megatron's validation: evaluations after steps 3, 6 and 7 of a 7-step run with {@code eval_interval 3}, each over
 * {@code eval_iters = 2} global batches of the valid split, read by one iterator that goes on from evaluation to
 * evaluation and across a resume. The expected losses are recomputed here from the valid split's Megatron order built
 * directly with the data module (sized by get_train_valid_test_num_samples: (7 div 3 + 1)·2·4 = 24 samples).
 */
class ValidationTest {
    private static final int STEPS = 7;
    private static final Map<String, Object> EVAL = Map.of("eval_interval", 3, "eval_iters", 2,
            "data", Map.of("split", "80,20,0"));

    @Test
    void valLossFollowsExactlyMegatronsStepsAndSamples(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = TrainingFixtures.config(STEPS, 0, 2, false, EVAL);
        assertEquals(24, config.train().validSamples());
        List<MicroBatch> valid = validMicroBatches(data, config, 24);
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, dir.resolve("ckpt"))) {
            int evaluation = 0;
            for (int step = 1; step <= STEPS; step++) {
                StepResult result = trainer.step();
                if (step == 3 || step == 6 || step == 7) {
                    // Evaluation e reads valid micro-batches [e·4, (e+1)·4): 2 iterations of M = 2.
                    double[] expected = reduce(valid.subList(evaluation * 4, (evaluation + 1) * 4), trainer::evaluate);
                    assertEquals(expected[0], result.valLoss(), "val_loss after step " + step + " (bit for bit)");
                    assertEquals(expected[1], result.valMtpLoss(), "val_mtp_loss after step " + step);
                    assertTrue(result.toJson().contains("\"val_loss\":" + expected[0]), result.toJson());
                    evaluation++;
                } else {
                    assertNull(result.valLoss(), "no evaluation after step " + step);
                    assertTrue(!result.toJson().contains("val_loss"), result.toJson());
                }
            }
            assertEquals(3, evaluation);
        }
    }

    @Test
    void resumeKeepsTheValidIteratorWhereItWas(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = TrainingFixtures.config(STEPS, 4, 2, false, EVAL);
        List<Double> straight;
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, dir.resolve("straight"))) {
            straight = TrainingFixtures.run(trainer, STEPS).stream().map(StepResult::valLoss).toList();
        }
        Path checkpoints = dir.resolve("interrupted");
        try (Trainer first = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            TrainingFixtures.run(first, 4);
            first.saveCheckpoint();
        }
        try (Trainer resumed = Trainer.create(TrainingFixtures.config(STEPS, 4, 1, false, EVAL), BigramModel.FACTORY,
                data, checkpoints)) {
            assertEquals(4L, resumed.restoreLatest().orElseThrow());
            List<Double> after = TrainingFixtures.run(resumed, 3).stream().map(StepResult::valLoss).toList();
            // Steps 5, 6, 7: evaluations 1 and 2 of the valid iterator, as in the uninterrupted run.
            assertEquals(straight.subList(4, 7), after);
            assertNotNull(after.get(1));
            assertNotNull(after.get(2));
        }
    }

    @Test
    void aCorpusWithoutValidDocumentsIsAnErrorNamingIt(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        Path tiny = dir.resolve("tiny");
        RecallDatasets.write(tiny, TrainingFixtures.TASK, 20, 3);
        // 99 % of 20 documents rounds to all 20: the tiny corpus has no valid document.
        KdapackConfig config = TrainingFixtures.config(STEPS, 0, 1, false, Map.of("eval_interval", 3,
                "data", Map.of("split", "99,1,0", "blend", List.of(Map.of("weight", 1, "prefix", data.toString()),
                        Map.of("weight", 1, "prefix", tiny.toString())))));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Trainer.create(config,
                BigramModel.FACTORY, TrainingCorpora.of(config.train().data()), dir.resolve("c")));
        assertTrue(e.getMessage().startsWith("train.eval_interval = 3 needs the valid split of 1.0 " + data + " 1.0 "
                + tiny + ": blend corpus 1 (" + tiny + "): split part valid holds 0 tokens"), e.getMessage());
    }

    /**
     * The schedule and windows at their edges, for the 7-step run with eval_interval 3 and eval_iters 2 (M = 2, so 4
     * micro-batches of B = 2 per evaluation, 8 samples): no evaluation at step 0, evaluation e's window starts at valid
     * sample 8·e, and micro-batch and range arguments are refused just past either end.
     */
    @Test
    void theScheduleAndItsWindowsAtTheirEdges(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = TrainingFixtures.config(STEPS, 0, 1, false, EVAL);
        Validation validation = Validation.open(TrainingCorpora.single(data), config.train(), 1);
        assertTrue(!validation.due(0), "no evaluation before the first step");
        assertEquals(List.of(3L, 6L, 7L), java.util.stream.LongStream.rangeClosed(0, STEPS).filter(validation::due)
                .boxed().toList());
        assertEquals(4, validation.microBatchesPerEvaluation());
        LanguageModel.Output unit = new LanguageModel.Output(new double[0], 1.0, 1, null, 0, 0);
        ValidationResult third = validation.reduce(7, java.util.Collections.nCopies(4,
                new io.kdapack.training.pipeline.MicroBatchLoss(new io.kdapack.core.loss.LossReport(1.0, 1), null)));
        assertEquals(2, third.evaluation());
        assertEquals(16, third.firstValidSample(), "evaluation 2 reads valid samples [16, 24)");
        assertEquals(8, third.samples());
        assertEquals(List.of(), validation.evaluate(3, 4, 4, b -> unit), "an empty range at the end");
        assertEquals(1, validation.evaluate(3, 3, 4, b -> unit).size());
        for (int[] range : new int[][] {{-1, 1}, {2, 1}, {0, 5}}) {
            assertEquals("micro-batches [" + range[0] + ", " + range[1] + ") outside the 4 of an evaluation",
                    assertThrows(IllegalArgumentException.class,
                            () -> validation.evaluate(3, range[0], range[1], b -> unit)).getMessage());
        }
        validation.microBatch(3, 3);
        for (int i : new int[] {-1, 4}) {
            assertEquals("micro-batch " + i + " outside the 4 of an evaluation",
                    assertThrows(IllegalArgumentException.class, () -> validation.microBatch(3, i)).getMessage());
        }
    }

    /** The valid split's samples in Megatron's order, straight from the data module, as micro-batches of B = 2. */
    private static List<MicroBatch> validMicroBatches(Path data, KdapackConfig config, int samples) throws IOException {
        var d = config.train().data();
        IndexedDataset dataset = IndexedDataset.open(data);
        GptIndexConfig order = new GptIndexConfig(48, 99, "80,20,0", DatasetSplit.VALID, (long) samples, true, true);
        GptSampleAssembler assembler = new GptSampleAssembler(dataset, GptIndices.build(dataset, order), 48, true,
                new SampleOptions(d.eodId(), d.padId(), d.eodMaskLoss(), d.resetPositionIds(), d.resetAttentionMask(),
                        false));
        GptSample sample = assembler.newSample();
        List<MicroBatch> out = new ArrayList<>();
        for (int first = 0; first < samples; first += 2) {
            int[] tokens = new int[96];
            int[] labels = new int[96];
            float[] mask = new float[96];
            int[] positions = new int[96];
            int[] segments = new int[96];
            for (int b = 0; b < 2; b++) {
                assembler.assemble(first + b, sample);
                System.arraycopy(sample.tokens(), 0, tokens, b * 48, 48);
                System.arraycopy(sample.labels(), 0, labels, b * 48, 48);
                System.arraycopy(sample.lossMask(), 0, mask, b * 48, 48);
                System.arraycopy(sample.positionIds(), 0, positions, b * 48, 48);
                System.arraycopy(sample.segmentIds(), 0, segments, b * 48, 48);
            }
            out.add(MicroBatchAssembler.of(2, 48, tokens, labels, mask, positions, segments, 1));
        }
        return out;
    }

    /** Megatron's evaluate reduction: Σ sums / Σ counts over all micro-batches (main, then MTP). */
    private static double[] reduce(List<MicroBatch> batches, java.util.function.Function<MicroBatch,
            LanguageModel.Output> forward) {
        double sum = 0;
        long count = 0;
        double mtpSum = 0;
        long mtpCount = 0;
        for (MicroBatch batch : batches) {
            LanguageModel.Output out = forward.apply(batch);
            sum += out.lossSum();
            count += out.lossCount();
            mtpSum += out.mtpLossSum();
            mtpCount += out.mtpLossCount();
        }
        return new double[] {sum / count, mtpSum / mtpCount};
    }
}
