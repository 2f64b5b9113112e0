package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.KdapackConfig;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.gpt.BlendedIndices;
import io.kdapack.data.gpt.BlendedSampleAssembler;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A run on {@code train.data.blend}: Megatron's blended order step by step; a blend of one is its prefix. */
class BlendTrainingTest {

    @Test
    void aBlendOfOneCorpusTrainsExactlyAsItsPrefix(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig plain = TrainingFixtures.config(3, 0, 1);
        KdapackConfig blendOfOne = TrainingFixtures.config(3, 0, 1, false,
                Map.of("data", Map.of("blend", List.of(Map.of("weight", 0.4, "prefix", data.toString())))));
        TrainingCorpora corpora = TrainingCorpora.of(blendOfOne.train().data());
        assertFalse(corpora.blended());
        assertEquals(List.of(data), corpora.prefixes());
        List<Double> a;
        List<Double> b;
        try (Trainer t = Trainer.create(plain, BigramModel.FACTORY, data, dir.resolve("a"))) {
            a = TrainingFixtures.run(t, 3).stream().map(StepResult::loss).toList();
        }
        try (Trainer t = Trainer.create(blendOfOne, BigramModel.FACTORY, corpora, dir.resolve("b"))) {
            b = TrainingFixtures.run(t, 3).stream().map(StepResult::loss).toList();
        }
        assertEquals(a, b);
    }

    @Test
    void stepsReadTheBlendedOrder(@TempDir Path dir) throws IOException {
        Path first = TrainingFixtures.dataset(dir);
        Path second = dir.resolve("second");
        RecallDatasets.write(second, TrainingFixtures.TASK, 300, 11);
        KdapackConfig config = TrainingFixtures.config(3, 0, 1, false, Map.of("data", Map.of("blend",
                "0.7 " + first + " 0.3 " + second)));
        TrainingCorpora corpora = TrainingCorpora.of(config.train().data());
        assertTrue(corpora.blended());
        var d = config.train().data();
        List<IndexedDataset> datasets = List.of(IndexedDataset.open(first), IndexedDataset.open(second));
        // 3 steps of 4 samples: Megatron's blend of 12 samples (ceil(8.4) + ceil(3.6) = 13).
        BlendedIndices indices = BlendedIndices.build(datasets, List.of("a", "b"), new double[] {0.7, 0.3},
                new GptIndexConfig(48, 99, d.split(), DatasetSplit.TRAIN, 12L, true, true));
        assertEquals(13, indices.sampleCount());
        BlendedSampleAssembler expected = new BlendedSampleAssembler(datasets, indices, 48, true, new SampleOptions(
                d.eodId(), d.padId(), d.eodMaskLoss(), d.resetPositionIds(), d.resetAttentionMask(), false));
        GptSample sample = expected.newSample();
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, corpora, dir.resolve("c"))) {
            List<MicroBatch> step3 = trainer.microBatches(3);
            // Step 3 holds global micro-batches 4 and 5: blended samples 8..11.
            for (int m = 0; m < 2; m++) {
                for (int b = 0; b < 2; b++) {
                    expected.assemble(8 + 2 * m + b, sample);
                    int[] tokens = java.util.Arrays.copyOfRange(step3.get(m).tokens(), b * 48, (b + 1) * 48);
                    assertArrayEquals(sample.tokens(), tokens, "micro-batch " + m + " row " + b);
                }
            }
        }
    }
}
