package io.kdapack.training.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kdapack.core.optim.AdamW;
import io.kdapack.core.optim.AdamWOptions;
import io.kdapack.core.optim.NamedParameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointStoreTest {
    private static final AdamWOptions ADAM = new AdamWOptions(0.9, 0.95, 1e-8, 0.1);

    record Param(String name, int[] shape, float[] values, float[] grads) implements NamedParameter {
    }

    /** A two-parameter model after {@code steps} AdamW updates. */
    private static List<Param> model(AdamW adam, int steps) {
        List<Param> params = List.of(
                new Param("model.layers.0.mlp.up_proj.weight", new int[] {2, 3},
                        new float[] {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}, new float[] {1f, 2f, -3f, 0.5f, 0.25f, -1f}),
                new Param("model.norm.weight", new int[] {3}, new float[] {1f, 1f, 1f}, new float[] {0.1f, -0.1f, 0.3f}));
        for (int i = 0; i < steps; i++) {
            adam.step(params, 1e-2);
        }
        return params;
    }

    private static Checkpoint checkpointAt(long step) {
        AdamW adam = new AdamW(ADAM);
        List<Param> params = model(adam, (int) step);
        return Checkpoint.of(new TrainingState(step, step * 8, "cfg-abc", Map.of("data", "12345")), params, adam.state());
    }

    @Test
    void roundTripsWeightsOptimizerAndState(@TempDir Path root) throws Exception {
        AdamW adam = new AdamW(ADAM);
        List<Param> params = model(adam, 3);
        CheckpointStore store = new CheckpointStore(root);
        Path dir = store.save(Checkpoint.of(new TrainingState(3, 24, "cfg-abc", Map.of("dropout", "7")), params, adam.state()));

        assertEquals(root.resolve("step-00000003"), dir);
        assertEquals("step-00000003", Files.readString(root.resolve("latest")).strip());
        Checkpoint back = store.loadLatest().orElseThrow();
        assertEquals(new TrainingState(3, 24, "cfg-abc", Map.of("dropout", "7")), back.state());
        assertArrayEquals(new long[] {2, 3}, back.weights().get("model.layers.0.mlp.up_proj.weight").shape());
        assertEquals(3, back.optimizer().step());

        List<Param> fresh = List.of(new Param("model.layers.0.mlp.up_proj.weight", new int[] {2, 3}, new float[6], new float[6]),
                new Param("model.norm.weight", new int[] {3}, new float[3], new float[3]));
        back.restoreInto(fresh);
        AdamW resumed = AdamW.restore(ADAM, back.optimizer());
        for (int i = 0; i < 2; i++) {
            assertArrayEquals(params.get(i).values(), fresh.get(i).values(), "weights are bit-identical");
        }
        // Continuing from the checkpoint with the same gradients equals continuing the original run, bit for bit.
        for (int i = 0; i < 2; i++) {
            System.arraycopy(params.get(i).grads(), 0, fresh.get(i).grads(), 0, params.get(i).grads().length);
        }
        adam.step(params, 5e-3);
        resumed.step(fresh, 5e-3);
        for (int i = 0; i < 2; i++) {
            assertArrayEquals(params.get(i).values(), fresh.get(i).values());
        }
    }

    @Test
    void exceptionMidWriteLeavesPreviousCheckpointLatest(@TempDir Path root) throws Exception {
        new CheckpointStore(root).save(checkpointAt(1));
        CheckpointStore crashing = new CheckpointStore(root, stage -> {
            if (stage.equals(CheckpointStore.MODEL_FILE)) {
                throw new IOException("disk full (simulated)");
            }
        });
        IOException e = assertThrows(IOException.class, () -> crashing.save(checkpointAt(2)));
        assertEquals("disk full (simulated)", e.getMessage());

        CheckpointStore store = new CheckpointStore(root);
        assertEquals(Optional.of(root.resolve("step-00000001")), store.latest());
        assertEquals("step-00000001", Files.readString(root.resolve("latest")).strip());
        assertEquals(1, store.loadLatest().orElseThrow().state().step());
        assertEquals(List.of("latest", "step-00000001"), entries(root), "no temporary directory left behind");
    }

    @Test
    void killedWriterLeavesOnlyIgnoredTemporaryFiles(@TempDir Path root) throws Exception {
        CheckpointStore store = new CheckpointStore(root);
        store.save(checkpointAt(1));
        // What a kill -9 during a save of step 2 leaves: a temporary directory with some of the files.
        Path temp = Files.createDirectory(root.resolve(".tmp-step-00000002-dead"));
        Files.write(temp.resolve(CheckpointStore.MODEL_FILE), new byte[] {1, 2, 3});
        // A step directory someone emptied by hand is not complete either.
        Files.createDirectory(root.resolve("step-00000009"));

        assertEquals(Optional.of(root.resolve("step-00000001")), store.latest());
        store.save(checkpointAt(2));
        assertEquals(Optional.of(root.resolve("step-00000002")), store.latest());
        assertEquals(List.of("latest", "step-00000001", "step-00000002", "step-00000009"), entries(root),
                "the next save removes the stale temporary directory");
    }

    @Test
    void crashBetweenRenameAndPointerStillFindsTheNewCheckpoint(@TempDir Path root) throws Exception {
        new CheckpointStore(root).save(checkpointAt(1));
        CheckpointStore crashing = new CheckpointStore(root, stage -> {
            if (stage.equals("renamed")) {
                throw new IOException("killed (simulated)");
            }
        });
        assertThrows(IOException.class, () -> crashing.save(checkpointAt(2)));
        assertEquals("step-00000001", Files.readString(root.resolve("latest")).strip());
        assertEquals(Optional.of(root.resolve("step-00000002")), new CheckpointStore(root).latest(),
                "the renamed directory is complete, so it is the latest");
    }

    @Test
    void savingTheSameStepReplacesIt(@TempDir Path root) throws Exception {
        CheckpointStore store = new CheckpointStore(root);
        store.save(checkpointAt(2));
        Checkpoint other = Checkpoint.of(new TrainingState(2, 99, "cfg-new", Map.of()), model(new AdamW(ADAM), 0),
                new AdamW(ADAM).state());
        store.save(other);
        assertEquals(99, store.loadLatest().orElseThrow().state().consumedSamples());
        assertEquals(List.of("latest", "step-00000002"), entries(root));
    }

    @Test
    void pruneKeepsTheNewest(@TempDir Path root) throws Exception {
        CheckpointStore store = new CheckpointStore(root);
        for (long step = 1; step <= 4; step++) {
            store.save(checkpointAt(step));
        }
        store.prune(2);
        assertEquals(List.of(root.resolve("step-00000003"), root.resolve("step-00000004")), store.checkpoints());
    }

    /** Pruning renames before it deletes: nothing of a pruned checkpoint, temporary or not, is left behind. */
    @Test
    void pruneLeavesNoTemporaryDirectories(@TempDir Path root) throws Exception {
        CheckpointStore store = new CheckpointStore(root);
        for (long step = 1; step <= 3; step++) {
            store.save(checkpointAt(step));
        }
        store.prune(1);
        assertEquals(List.of("latest", "step-00000003"), entries(root));
        assertEquals("step-00000003", Files.readString(root.resolve("latest")).strip());
    }

    /** Every file of a checkpoint, and {@code latest}, is 0600 and the checkpoint's directory 0700 (POSIX only). */
    @Test
    void checkpointFilesAreReadableByTheirOwnerOnly(@TempDir Path root) throws Exception {
        assumeTrue(root.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions here");
        Path dir = new CheckpointStore(root).save(checkpointAt(1));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        for (String file : List.of(CheckpointStore.MODEL_FILE, CheckpointStore.OPTIMIZER_FILE, CheckpointStore.STATE_FILE)) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(file))), file);
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(root.resolve("latest"))));
    }

    /** A failure after any of the three files leaves the previous checkpoint latest and nothing behind (PIT). */
    @Test
    void aFailureAfterAnyFileLeavesThePreviousCheckpointLatest(@TempDir Path root) throws Exception {
        new CheckpointStore(root).save(checkpointAt(1));
        for (String failAfter : List.of(CheckpointStore.MODEL_FILE, CheckpointStore.OPTIMIZER_FILE,
                CheckpointStore.STATE_FILE)) {
            CheckpointStore crashing = new CheckpointStore(root, stage -> {
                if (stage.equals(failAfter)) {
                    throw new IOException("failed after " + failAfter);
                }
            });
            assertEquals("failed after " + failAfter,
                    assertThrows(IOException.class, () -> crashing.save(checkpointAt(2))).getMessage());
            assertEquals(Optional.of(root.resolve("step-00000001")), new CheckpointStore(root).latest(), failAfter);
            assertEquals(List.of("latest", "step-00000001"), entries(root), "nothing left after " + failAfter);
        }
    }

    /** prune(1) keeps exactly the newest; a complete copy under another name is no checkpoint (PIT survivors). */
    @Test
    void pruneToOneAndDirectoriesOfOtherNamesAreIgnored(@TempDir Path root) throws Exception {
        CheckpointStore store = new CheckpointStore(root);
        assertEquals(root, store.root());
        for (long step = 1; step <= 3; step++) {
            store.save(checkpointAt(step));
        }
        Path copy = Files.createDirectory(root.resolve("backup-of-step-3"));
        try (var files = Files.list(root.resolve("step-00000003"))) {
            for (Path file : files.toList()) {
                Files.copy(file, copy.resolve(file.getFileName()));
            }
        }
        store.prune(1);
        assertEquals(List.of(root.resolve("step-00000003")), store.checkpoints());
        assertTrue(Files.isDirectory(copy), "prune leaves what is not a checkpoint");
    }

    /** A fresh run's state (step 0, nothing consumed) is legal; negative counts are refused by name (PIT). */
    @Test
    void trainingStateAcceptsZeroAndRefusesNegativeCounts() {
        assertEquals(0, new TrainingState(0, 0, "cfg", Map.of()).step());
        assertEquals("step must be >= 0, got -1", assertThrows(IllegalArgumentException.class,
                () -> new TrainingState(-1, 0, "cfg", Map.of())).getMessage());
        assertEquals("consumedSamples must be >= 0, got -1", assertThrows(IllegalArgumentException.class,
                () -> new TrainingState(0, -1, "cfg", Map.of())).getMessage());
    }

    /** Optimizer moments without a weight of their size are refused, naming the weight (PIT: no coverage before). */
    @Test
    void optimizerStateMustMatchTheWeights() {
        Checkpoint good = checkpointAt(1);
        TrainingState state = good.state();
        var missing = new io.kdapack.core.optim.AdamWState(1, Map.of("nope.weight", new float[2]),
                Map.of("nope.weight", new float[2]));
        assertEquals("optimizer state for 'nope.weight' (2 elements) has no weight of that size (missing)",
                assertThrows(IllegalArgumentException.class, () -> new Checkpoint(state, good.weights(), missing))
                        .getMessage());
        var wrongSize = new io.kdapack.core.optim.AdamWState(1, Map.of("model.norm.weight", new float[2]),
                Map.of("model.norm.weight", new float[2]));
        assertEquals("optimizer state for 'model.norm.weight' (2 elements) has no weight of that size (3 elements)",
                assertThrows(IllegalArgumentException.class, () -> new Checkpoint(state, good.weights(), wrongSize))
                        .getMessage());
    }

    @Test
    void emptyOrMissingRootHasNoLatest(@TempDir Path root) throws Exception {
        assertEquals(Optional.empty(), new CheckpointStore(root.resolve("absent")).latest());
        assertEquals(Optional.empty(), new CheckpointStore(root).loadLatest());
    }

    @Test
    void corruptFilesAreReportedByName(@TempDir Path root) throws Exception {
        Path dir = new CheckpointStore(root).save(checkpointAt(1));
        Files.writeString(dir.resolve(CheckpointStore.STATE_FILE), "{\"format\": \"kdapack-checkpoint-v1\", \"step\": \"x\"}");
        IOException e = assertThrows(IOException.class, () -> CheckpointStore.load(dir));
        assertTrue(e.getMessage().contains("state.json: step: expected an integer"), e.getMessage());
        Files.writeString(dir.resolve(CheckpointStore.STATE_FILE), "not json");
        e = assertThrows(IOException.class, () -> CheckpointStore.load(dir));
        assertTrue(e.getMessage().contains("state.json: unreadable state"), e.getMessage());
        Files.writeString(dir.resolve(CheckpointStore.STATE_FILE), "");
        e = assertThrows(IOException.class, () -> CheckpointStore.load(dir));
        assertTrue(e.getMessage().contains("state.json: format: expected 'kdapack-checkpoint-v1', found nothing"),
                e.getMessage());
    }

    @Test
    void restoreRefusesMismatchedModels() {
        Checkpoint c = checkpointAt(1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.restoreInto(
                List.of(new Param("model.norm.weight", new int[] {4}, new float[4], new float[4]))));
        assertTrue(e.getMessage().contains("checkpoint shape [3], model shape [4]"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.restoreInto(
                List.of(new Param("model.norm.weight", new int[] {3}, new float[3], new float[3]))));
        assertTrue(e.getMessage().contains("'model.layers.0.mlp.up_proj.weight' is not a parameter"), e.getMessage());
    }

    private static List<String> entries(Path root) throws IOException {
        try (Stream<Path> s = Files.list(root)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
