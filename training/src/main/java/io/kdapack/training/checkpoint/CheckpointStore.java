package io.kdapack.training.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.optim.AdamWState;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A directory of checkpoints, one sub-directory per step:
 * <pre>
 *   root/step-00000100/model.safetensors      F32 weights by parameter name
 *   root/step-00000100/optimizer.safetensors  exp_avg.NAME, exp_avg_sq.NAME (F32, the weight's shape), step (I64 [])
 *   root/step-00000100/state.json             {format, step, consumed_samples, config_hash, rng}
 *   root/latest                               the name of the newest checkpoint directory, for people and tools
 * </pre>
 * A checkpoint is written whole or not at all: its files go to a hidden {@code .tmp-…} directory, each file and the
 * directory are fsynced, the directory is renamed to {@code step-N} (atomic), the root is fsynced, and only then is
 * {@code latest} replaced (atomically). A crash at any point leaves every earlier checkpoint intact; {@link #latest()}
 * finds the newest complete {@code step-N} directory by listing, so it is right even when the crash fell between the
 * rename and the pointer update, and it never looks at temporary directories.
 */
public final class CheckpointStore {
    static final String MODEL_FILE = "model.safetensors";
    static final String OPTIMIZER_FILE = "optimizer.safetensors";
    static final String STATE_FILE = "state.json";
    static final String LATEST_FILE = "latest";
    static final String FORMAT = "kdapack-checkpoint-v1";
    private static final String TEMP_PREFIX = ".tmp-";
    private static final Pattern STEP_DIR = Pattern.compile("step-(\\d{8,})");
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * Checkpoint files are 0600 and their directories 0700 (a model's weights are its owner's); on a file system
     * without POSIX permissions (Windows, FAT) they get that file system's defaults (on NTFS, the parent's ACL).
     * {@code latest} is written by {@link SafeTensors#writeAtomically}, whose temporary file is 0600 on POSIX.
     */
    private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    private static final Set<PosixFilePermission> OWNER_ONLY_DIRECTORY = PosixFilePermissions.fromString("rwx------");

    /** Test seam: called after each stage of a save ("model.safetensors", …, "renamed"); may throw to simulate a crash. */
    interface SaveListener {
        void reached(String stage) throws IOException;
    }

    private final Path root;
    private final SaveListener listener;

    public CheckpointStore(Path root) {
        this(root, stage -> { });
    }

    CheckpointStore(Path root, SaveListener listener) {
        if (root == null) {
            throw new IllegalArgumentException("checkpoint root must not be null");
        }
        this.root = root;
        this.listener = listener;
    }

    public Path root() {
        return root;
    }

    /** The directory name of the checkpoint of {@code step}. */
    public static String directoryName(long step) {
        return String.format("step-%08d", step);
    }

    /**
     * Writes {@code checkpoint} atomically and points {@code latest} at it. An existing checkpoint of the same step is
     * replaced. Leftover temporary directories of interrupted saves are removed first.
     *
     * @return the checkpoint's directory
     */
    public Path save(Checkpoint checkpoint) throws IOException {
        Files.createDirectories(root);
        removeTemporaryDirectories();
        String name = directoryName(checkpoint.state().step());
        Path temp = root.resolve(TEMP_PREFIX + name + "-" + UUID.randomUUID());
        Path target = root.resolve(name);
        try {
            if (POSIX) {
                Files.createDirectory(temp, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIRECTORY));
            } else {
                Files.createDirectory(temp);
            }
            writeSynced(temp.resolve(MODEL_FILE), modelFile(checkpoint).toBytes());
            listener.reached(MODEL_FILE);
            writeSynced(temp.resolve(OPTIMIZER_FILE), optimizerFile(checkpoint).toBytes());
            listener.reached(OPTIMIZER_FILE);
            writeSynced(temp.resolve(STATE_FILE), stateJson(checkpoint.state()));
            listener.reached(STATE_FILE);
            syncDirectory(temp);
            if (Files.exists(target)) {
                Path old = root.resolve(TEMP_PREFIX + "replaced-" + name + "-" + UUID.randomUUID());
                Files.move(target, old, StandardCopyOption.ATOMIC_MOVE);
                deleteRecursively(old);
            }
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            syncDirectory(root);
        } finally {
            if (Files.exists(temp)) {
                deleteRecursively(temp);
            }
        }
        listener.reached("renamed");
        SafeTensors.writeAtomically(root.resolve(LATEST_FILE), (name + "\n").getBytes(StandardCharsets.UTF_8));
        syncDirectory(root);
        return target;
    }

    /** The newest complete checkpoint directory, if any. */
    public Optional<Path> latest() throws IOException {
        List<Path> all = checkpoints();
        return all.isEmpty() ? Optional.empty() : Optional.of(all.get(all.size() - 1));
    }

    /** Complete checkpoint directories, oldest first (temporary and incomplete directories are skipped). */
    public List<Path> checkpoints() throws IOException {
        if (!Files.isDirectory(root)) {
            return List.of();
        }
        List<Path> found = new ArrayList<>();
        try (Stream<Path> entries = Files.list(root)) {
            entries.filter(p -> STEP_DIR.matcher(p.getFileName().toString()).matches())
                    .filter(CheckpointStore::isComplete)
                    .forEach(found::add);
        }
        found.sort(Comparator.comparingLong(CheckpointStore::stepOf));
        return found;
    }

    /** The newest complete checkpoint, read back. */
    public Optional<Checkpoint> loadLatest() throws IOException {
        Optional<Path> dir = latest();
        return dir.isEmpty() ? Optional.empty() : Optional.of(load(dir.get()));
    }

    /**
     * Deletes all but the newest {@code keep} complete checkpoints. Each is first renamed to a temporary directory
     * (atomic), so a crash while deleting leaves it invisible, and the next save removes what is left of it.
     */
    public void prune(int keep) throws IOException {
        if (keep < 1) {
            throw new IllegalArgumentException("keep must be >= 1, got " + keep);
        }
        List<Path> all = checkpoints();
        for (int i = 0; i < all.size() - keep; i++) {
            Path doomed = root.resolve(TEMP_PREFIX + "pruned-" + all.get(i).getFileName() + "-" + UUID.randomUUID());
            Files.move(all.get(i), doomed, StandardCopyOption.ATOMIC_MOVE);
            deleteRecursively(doomed);
        }
        syncDirectory(root);
    }

    /** Reads the checkpoint in {@code dir}; a missing or inconsistent file is an error naming it. */
    public static Checkpoint load(Path dir) throws IOException {
        TrainingState state = readState(dir.resolve(STATE_FILE));
        SafeTensors model = SafeTensors.read(dir.resolve(MODEL_FILE));
        SafeTensors optimizer = SafeTensors.read(dir.resolve(OPTIMIZER_FILE));
        Map<String, float[]> expAvg = new LinkedHashMap<>();
        Map<String, float[]> expAvgSq = new LinkedHashMap<>();
        for (Tensor t : optimizer.tensors().values()) {
            if (t.name().startsWith("exp_avg_sq.")) {
                expAvgSq.put(t.name().substring("exp_avg_sq.".length()), t.toFloatArray());
            } else if (t.name().startsWith("exp_avg.")) {
                expAvg.put(t.name().substring("exp_avg.".length()), t.toFloatArray());
            } else if (!t.name().equals("step")) {
                throw new IOException(dir.resolve(OPTIMIZER_FILE) + ": unexpected tensor '" + t.name() + "'");
            }
        }
        long optimizerStep = optimizer.get("step").toLongArray()[0];
        try {
            return new Checkpoint(state, model.tensors(), new AdamWState(optimizerStep, expAvg, expAvgSq));
        } catch (IllegalArgumentException e) {
            throw new IOException(dir + ": inconsistent checkpoint: " + e.getMessage(), e);
        }
    }

    private static SafeTensors modelFile(Checkpoint checkpoint) {
        SafeTensors.Builder b = SafeTensors.builder().meta("format", FORMAT);
        for (Tensor w : checkpoint.weights().values()) {
            if (w.dtype() != DType.F32) {
                throw new IllegalArgumentException("weight '" + w.name() + "' is " + w.dtype() + ", checkpoints hold F32");
            }
            b.put(w);
        }
        return b.build();
    }

    private static SafeTensors optimizerFile(Checkpoint checkpoint) {
        AdamWState s = checkpoint.optimizer();
        SafeTensors.Builder b = SafeTensors.builder().meta("format", FORMAT)
                .put(Tensor.of("step", new long[] {s.step()}));
        for (String name : s.expAvg().keySet()) {
            long[] shape = checkpoint.weights().get(name).shape();
            b.put(Tensor.of("exp_avg." + name, s.expAvg().get(name), shape));
            b.put(Tensor.of("exp_avg_sq." + name, s.expAvgSq().get(name), shape));
        }
        return b.build();
    }

    private static byte[] stateJson(TrainingState state) {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", FORMAT);
        root.put("step", state.step());
        root.put("consumed_samples", state.consumedSamples());
        root.put("config_hash", state.configHash());
        ObjectNode rng = root.putObject("rng");
        state.rng().forEach(rng::put);
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static TrainingState readState(Path file) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new IOException(file + ": unreadable state: " + e.getMessage(), e);
        }
        boolean empty = root == null || root.isMissingNode(); // Jackson reads an empty file as a missing node
        if (empty || !FORMAT.equals(root.path("format").asText())) {
            throw new IOException(file + ": format: expected '" + FORMAT + "', found " + (empty ? "nothing" : root.get("format")));
        }
        for (String field : List.of("step", "consumed_samples")) {
            if (!root.path(field).canConvertToLong() || !root.path(field).isIntegralNumber()) {
                throw new IOException(file + ": " + field + ": expected an integer, found " + root.get(field));
            }
        }
        Map<String, String> rng = new LinkedHashMap<>();
        root.path("rng").properties().forEach(e -> rng.put(e.getKey(), e.getValue().asText()));
        try {
            return new TrainingState(root.get("step").asLong(), root.get("consumed_samples").asLong(),
                    root.path("config_hash").asText(), rng);
        } catch (IllegalArgumentException e) {
            throw new IOException(file + ": " + e.getMessage(), e);
        }
    }

    private static boolean isComplete(Path dir) {
        return Files.isRegularFile(dir.resolve(MODEL_FILE)) && Files.isRegularFile(dir.resolve(OPTIMIZER_FILE))
                && Files.isRegularFile(dir.resolve(STATE_FILE));
    }

    /** The step of checkpoint directory {@code dir} ({@code step-N}). */
    public static long stepOf(Path dir) {
        Matcher m = STEP_DIR.matcher(dir.getFileName().toString());
        if (!m.matches()) {
            throw new IllegalStateException("not a checkpoint directory: " + dir);
        }
        return Long.parseLong(m.group(1));
    }

    private void removeTemporaryDirectories() throws IOException {
        try (Stream<Path> entries = Files.list(root)) {
            for (Path p : entries.filter(p -> p.getFileName().toString().startsWith(TEMP_PREFIX)).toList()) {
                deleteRecursively(p);
            }
        }
    }

    /** Writes a new file readable and writable by its owner only (0600) where the file system has POSIX permissions. */
    private static void writeSynced(Path file, byte[] bytes) throws IOException {
        Set<StandardOpenOption> options = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        try (FileChannel ch = POSIX ? FileChannel.open(file, options, PosixFilePermissions.asFileAttribute(OWNER_ONLY))
                : FileChannel.open(file, options)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
    }

    /** fsync of a directory, so that a rename or a new entry in it survives a power loss (a no-op where unsupported). */
    private static void syncDirectory(Path dir) {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            // Some platforms cannot open or sync a directory; the rename is still atomic there.
        }
    }

    private static void deleteRecursively(Path path) throws IOException {
        try (Stream<Path> walk = Files.walk(path)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
