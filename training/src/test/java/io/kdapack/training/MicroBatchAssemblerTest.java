package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.DataConfig;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.training.pipeline.RawMicroBatch;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Micro-batch {@code k} holds dataset samples {@code [k·B, (k+1)·B)} of Megatron's order, each row exactly what the
 * data module's {@link GptSampleAssembler} gives for that sample (built here straight from the data module); the
 * arguments are checked at their edges.
 */
class MicroBatchAssemblerTest {
    private static final int LENGTH = 40;
    private static final int ROWS = 3;

    @Test
    void eachRowIsTheDataModulesSampleOfItsIndex(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        DataConfig d = DataConfig.defaults();
        MegatronSamples samples = MegatronSamples.open(data, d, LENGTH, 3, 10);
        MicroBatchAssembler assembler = new MicroBatchAssembler(samples, ROWS, 0);
        assertEquals(ROWS, assembler.rows());
        long count = assembler.microBatchCount();
        assertTrue(count * ROWS <= samples.sampleCount() && samples.sampleCount() < (count + 1) * ROWS,
                count + " whole micro-batches of " + ROWS + " in " + samples.sampleCount() + " samples");

        IndexedDataset dataset = IndexedDataset.open(data);
        GptSampleAssembler reference = new GptSampleAssembler(dataset, GptIndices.build(dataset,
                new GptIndexConfig(LENGTH, 3, d.split(), DatasetSplit.TRAIN, 10L, true, true)), LENGTH, true,
                new SampleOptions(d.eodId(), d.padId(), d.eodMaskLoss(), d.resetPositionIds(), d.resetAttentionMask(),
                        false));
        GptSample sample = reference.newSample();
        for (long k : new long[] {0, 1, count - 1}) {
            MicroBatch batch = assembler.microBatch(k);
            assertNull(batch.mtpLabels(), "no MTP arrays at depth 0");
            for (int b = 0; b < ROWS; b++) {
                reference.assemble(Math.toIntExact(k * ROWS + b), sample);
                String where = "micro-batch " + k + " row " + b + " ";
                assertArrayEquals(sample.tokens(), slice(batch.tokens(), b), where + "tokens");
                assertArrayEquals(sample.labels(), slice(batch.labels(), b), where + "labels");
                assertArrayEquals(sample.lossMask(), slice(batch.lossMask(), b), where + "loss mask");
                assertArrayEquals(sample.positionIds(), slice(batch.positionIds(), b), where + "positions");
                assertArrayEquals(sample.segmentIds(), slice(batch.segmentIds(), b), where + "segments");
            }
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> assembler.raw(count));
        assertEquals("micro-batch index " + count + " outside [0, " + count + ")", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> assembler.raw(-1));
        assertEquals("micro-batch index -1 outside [0, " + count + ")", e.getMessage());
        RawMicroBatch narrow = new RawMicroBatch(5, ROWS, LENGTH, new int[ROWS * LENGTH], new int[ROWS]);
        e = assertThrows(IllegalArgumentException.class, () -> assembler.segment(narrow));
        assertEquals("raw micro-batch 5 is [3, 40], expected [3, 41]", e.getMessage());
    }

    @Test
    void rowsAndMtpDepthAreCheckedAtTheirEdges(@TempDir Path dir) throws IOException {
        MegatronSamples samples = MegatronSamples.open(TrainingFixtures.dataset(dir), DataConfig.defaults(), LENGTH, 3, 4);
        assertEquals(1, new MicroBatchAssembler(samples, 1, 0).rows());
        assertTrue(new MicroBatchAssembler(samples, 1, 1).microBatch(0).mtpLabels() != null, "MTP arrays at depth 1");
        assertEquals("rows (micro_batch_size) must be >= 1, got 0", assertThrows(IllegalArgumentException.class,
                () -> new MicroBatchAssembler(samples, 0, 0)).getMessage());
        for (int depth : new int[] {-1, 2}) {
            assertEquals("mtpDepth must be 0 or 1 (a MicroBatch carries one rolled target), got " + depth,
                    assertThrows(IllegalArgumentException.class, () -> new MicroBatchAssembler(samples, 1, depth))
                            .getMessage());
        }
    }

    private static int[] slice(int[] x, int row) {
        return java.util.Arrays.copyOfRange(x, row * LENGTH, (row + 1) * LENGTH);
    }

    private static float[] slice(float[] x, int row) {
        return java.util.Arrays.copyOfRange(x, row * LENGTH, (row + 1) * LENGTH);
    }
}
