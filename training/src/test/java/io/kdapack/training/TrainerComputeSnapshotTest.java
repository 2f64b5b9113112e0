package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.Tensor;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.StepLoss;
import io.kdapack.training.pipeline.TrainerBackend;
import io.kdapack.training.pipeline.WeightSnapshot;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link StepCompute#snapshotWeights} of the training loop's model stage: the weights of the step, as a copy. */
class TrainerComputeSnapshotTest {

    @Test
    void theSnapshotOfAStepIsItsCheckpointsWeightsAndStaysSoAfterLaterSteps(@TempDir Path dir) throws Exception {
        var config = TrainingFixtures.config(3, 0, 1);
        TrainerBackend backend = new TrainerBackend(config, BigramModel.FACTORY, TrainingFixtures.dataset(dir),
                dir.resolve("ckpt"));
        SampleSource samples = backend.samples();
        BatchSegmenter segmenter = backend.segmenter();
        int m = backend.plan().microBatchesPerStep();
        try (StepCompute compute = backend.createCompute()) {
            assertEquals(0, compute.restoreLatestCheckpoint());
            step(compute, samples, segmenter, 1, m);
            WeightSnapshot first = compute.snapshotWeights(1);
            assertEquals(1, first.step());
            assertEquals(config, first.config());
            compute.saveCheckpoint(1);
            Checkpoint saved = CheckpointStore.load(dir.resolve("ckpt").resolve(CheckpointStore.directoryName(1)));
            assertEquals(saved.weights().keySet(), first.values().keySet());
            for (Map.Entry<String, Tensor> w : saved.weights().entrySet()) {
                assertArrayEquals(w.getValue().toFloatArray(), first.values().get(w.getKey()), w.getKey());
            }
            assertThrows(IllegalStateException.class, () -> compute.snapshotWeights(2), "the trainer is at step 1");

            step(compute, samples, segmenter, 2, m);
            WeightSnapshot second = compute.snapshotWeights(2);
            boolean moved = false;
            for (Map.Entry<String, Tensor> w : saved.weights().entrySet()) {
                assertArrayEquals(w.getValue().toFloatArray(), first.values().get(w.getKey()),
                        "the step-1 copy is untouched by step 2: " + w.getKey());
                moved |= !java.util.Arrays.equals(first.values().get(w.getKey()), second.values().get(w.getKey()));
            }
            assertTrue(moved, "step 2 changed the weights");

            // Restored into a model of the same shape it gives the same values; a mismatch names the parameter.
            List<Parameter> copy = new ArrayList<>();
            for (Map.Entry<String, Tensor> w : saved.weights().entrySet()) {
                int[] shape = java.util.Arrays.stream(w.getValue().shape()).mapToInt(d -> (int) d).toArray();
                copy.add(Parameter.filled(w.getKey(), 0f, shape));
            }
            second.restoreInto(copy);
            for (Parameter p : copy) {
                assertArrayEquals(second.values().get(p.name()), p.values(), p.name());
            }
            List<Parameter> wrong = new ArrayList<>(copy);
            Parameter last = wrong.removeLast();
            wrong.add(Parameter.filled(last.name(), 0f, last.size() + 1));
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> second.restoreInto(wrong));
            assertTrue(bad.getMessage().contains(last.name()), bad.getMessage());
            assertFalse(second.isUnchanged());
        }
    }

    private static void step(StepCompute compute, SampleSource samples, BatchSegmenter segmenter, long step, int m)
            throws Exception {
        List<MicroBatch> batches = new ArrayList<>();
        for (int i = 0; i < m; i++) {
            batches.add(segmenter.segment(samples.load((step - 1) * m + i)));
        }
        var losses = compute.forwardBackward(batches);
        compute.optimizerStep(StepLoss.reduce(step, losses, 0, 0));
    }
}
