package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.KdapackConfig;
import io.kdapack.core.nn.Parameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainerTest {

    @Test
    void lossFallsOnTheRecallData(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        try (Trainer trainer = Trainer.create(TrainingFixtures.config(30, 0, 2), BigramModel.FACTORY, data,
                dir.resolve("ckpt"))) {
            List<StepResult> steps = TrainingFixtures.run(trainer, 30);
            double first = steps.get(0).loss();
            double last = steps.subList(25, 30).stream().mapToDouble(StepResult::loss).average().orElseThrow();
            // Uniform over 132 tokens is ln 132 ≈ 4.88; a bigram model can learn that keys and values alternate
            // (each uniform over 64: ln 64 ≈ 4.16), not the bindings.
            assertEquals(Math.log(132), first, 0.1);
            assertTrue(last < first - 0.35, "loss " + first + " → " + last);
            StepResult s = steps.get(29);
            assertEquals(30, s.step());
            assertEquals(2 * 2 * 48, s.tokens());
            assertTrue(s.segments() >= 4, "at least one document per row, got " + s.segments());
            assertTrue(s.mtpLoss() != null && s.mtpLoss() > 0);
            assertEquals(0.005, s.lr(), 1e-3, "cosine decay reaches min_lr at the last step");
            assertTrue(trainer.finished());
            assertThrows(IllegalStateException.class, trainer::step);
        }
    }

    @Test
    void sameSeedGivesBitIdenticalLossesAndWeightsWhateverTheThreadCount(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        Run one = run(TrainingFixtures.config(5, 0, 1), data, dir.resolve("a"), 5);
        Run three = run(TrainingFixtures.config(5, 0, 3), data, dir.resolve("b"), 5);
        assertBitIdentical(one, three);
    }

    @Test
    void resumeContinuesBitIdentically(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = TrainingFixtures.config(6, 3, 2);
        Run straight = run(config, data, dir.resolve("straight"), 6);

        Path checkpoints = dir.resolve("interrupted");
        try (Trainer first = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            TrainingFixtures.run(first, 3);
            assertTrue(first.checkpointDue());
            first.saveCheckpoint();
        }
        // Another thread count on resume: results do not depend on it.
        Run resumed = resume(TrainingFixtures.config(6, 3, 1), data, checkpoints, 3, 3);
        assertEquals(straight.losses.subList(3, 6), resumed.losses);
        assertEquals(straight.gradNorms.subList(3, 6), resumed.gradNorms);
        assertArrayEquals(straight.weights, resumed.weights);
    }

    /**
     * {@code train.checkpoint.keep_last: 2}: after each save only the newest two remain, the run still resumes
     * bit-identically from the newest, and a resumed run goes on pruning.
     */
    @Test
    void keepLastKeepsTheNewestCheckpointsAndResumeStillWorks(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = TrainingFixtures.config(6, 1, 2, false,
                Map.of("checkpoint", Map.of("interval", 1, "keep_last", 2)));
        assertEquals(2, config.train().checkpoint().keepLast());
        Run straight = run(TrainingFixtures.config(6, 1, 2), data, dir.resolve("straight"), 6);

        Path checkpoints = dir.resolve("kept");
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            for (int step = 1; step <= 4; step++) {
                trainer.step();
                trainer.saveCheckpoint();
                assertEquals(Math.min(step, 2), trainer.checkpoints().checkpoints().size(), "after step " + step);
            }
            assertEquals(List.of("latest", "step-00000003", "step-00000004"), entries(checkpoints),
                    "no temporary directory is left behind");
        }
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            assertEquals(4L, trainer.restoreLatest().orElseThrow());
            List<StepResult> steps = new java.util.ArrayList<>();
            for (int step = 5; step <= 6; step++) {
                steps.add(trainer.step());
                trainer.saveCheckpoint();
            }
            Run resumed = record(trainer, steps);
            assertEquals(straight.losses.subList(4, 6), resumed.losses);
            assertArrayEquals(straight.weights, resumed.weights);
        }
        assertEquals(List.of("latest", "step-00000005", "step-00000006"), entries(checkpoints));
    }

    private static List<String> entries(Path dir) throws IOException {
        try (var list = Files.list(dir)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aCheckpointLeftHalfWrittenIsSkippedAndTheRunResumesFromThePreviousOne(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        KdapackConfig config = TrainingFixtures.config(6, 2, 2);
        Run straight = run(config, data, dir.resolve("straight"), 6);

        Path checkpoints = dir.resolve("crashed");
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            TrainingFixtures.run(trainer, 2);
            trainer.saveCheckpoint();
            TrainingFixtures.run(trainer, 2);
            Path step4 = trainer.saveCheckpoint();
            // A crash during the save of step 4: the temporary directory holds part of it and never got renamed.
            Path partial = checkpoints.resolve(".tmp-step-00000004-crash");
            Files.move(step4, partial);
            Files.delete(partial.resolve("state.json"));
            Files.writeString(partial.resolve("model.safetensors"), "truncated");
            // A step directory without its state file is incomplete too.
            Path incomplete = Files.createDirectory(checkpoints.resolve("step-00000005"));
            Files.writeString(incomplete.resolve("model.safetensors"), "truncated");
        }
        Run resumed = resume(config, data, checkpoints, 2, 4);
        assertEquals(straight.losses.subList(2, 6), resumed.losses);
        assertArrayEquals(straight.weights, resumed.weights);
    }

    @Test
    void resumeRefusesACheckpointOfAnotherConfiguration(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        Path checkpoints = dir.resolve("ckpt");
        try (Trainer trainer = Trainer.create(TrainingFixtures.config(4, 0, 1), BigramModel.FACTORY, data, checkpoints)) {
            trainer.step();
            trainer.saveCheckpoint();
        }
        KdapackConfig other = TrainingFixtures.config(4, 0, 1, true, Map.of());
        try (Trainer trainer = Trainer.create(other, BigramModel.FACTORY, data, checkpoints)) {
            IOException e = assertThrows(IOException.class, trainer::restoreLatest);
            assertTrue(e.getMessage().contains("different configuration"), e.getMessage());
        }
    }

    @Test
    void withoutACheckpointResumeStartsFresh(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        try (Trainer trainer = Trainer.create(TrainingFixtures.config(4, 0, 1), BigramModel.FACTORY, data,
                dir.resolve("none"))) {
            assertTrue(trainer.restoreLatest().isEmpty());
            assertEquals(0, trainer.stepsDone());
        }
    }

    @Test
    void isolationReachesTheModel(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        Run isolated = run(TrainingFixtures.config(2, 0, 1), data, dir.resolve("a"), 2);
        Run leaky = run(TrainingFixtures.config(2, 0, 1, false, Map.of("isolation", false)), data, dir.resolve("b"), 2);
        // The double drops the previous-token term at document starts only when isolated.
        assertNotEquals(isolated.losses.get(0), leaky.losses.get(0));
    }

    @Test
    void stepsFollowTheMegatronOrderOfMicroBatches(@TempDir Path dir) throws IOException {
        Path data = TrainingFixtures.dataset(dir);
        try (Trainer trainer = Trainer.create(TrainingFixtures.config(3, 0, 1), BigramModel.FACTORY, data,
                dir.resolve("c"))) {
            KdapackConfig config = trainer.config();
            MegatronSamples samples = MegatronSamples.open(data, config.train().data(), 48, 99, 12);
            MicroBatchAssembler assembler = new MicroBatchAssembler(samples, 2, 1);
            // Step 2 holds global micro-batches 2 and 3, i.e. dataset indices 4..7.
            assertEquals(List.of(assembler.microBatch(2), assembler.microBatch(3)), trainer.microBatches(2));
            assertThrows(IllegalArgumentException.class, () -> trainer.microBatches(4));
        }
    }

    private record Run(List<Double> losses, List<Double> gradNorms, float[] weights) {
    }

    private static Run run(KdapackConfig config, Path data, Path checkpoints, int steps) throws IOException {
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            return record(trainer, TrainingFixtures.run(trainer, steps));
        }
    }

    private static Run resume(KdapackConfig config, Path data, Path checkpoints, long expectedStep, int steps)
            throws IOException {
        try (Trainer trainer = Trainer.create(config, BigramModel.FACTORY, data, checkpoints)) {
            assertEquals(expectedStep, trainer.restoreLatest().orElseThrow());
            assertEquals(expectedStep * config.train().globalBatchSize(), trainer.consumedSamples());
            return record(trainer, TrainingFixtures.run(trainer, steps));
        }
    }

    private static Run record(Trainer trainer, List<StepResult> steps) {
        List<Double> losses = steps.stream().map(StepResult::loss).toList();
        List<Double> norms = steps.stream().map(StepResult::gradNorm).toList();
        int size = trainer.model().parameters().stream().mapToInt(Parameter::size).sum();
        float[] weights = new float[size];
        int at = 0;
        for (Parameter p : trainer.model().parameters()) {
            System.arraycopy(p.values(), 0, weights, at, p.size());
            at += p.size();
        }
        return new Run(losses, norms, weights);
    }

    private static void assertBitIdentical(Run a, Run b) {
        // List<Double>.equals compares with Double.equals: bit patterns.
        assertEquals(a.losses, b.losses);
        assertEquals(a.gradNorms, b.gradNorms);
        assertArrayEquals(a.weights, b.weights);
    }
}
