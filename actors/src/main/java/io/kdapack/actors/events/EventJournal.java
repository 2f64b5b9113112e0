package io.kdapack.actors.events;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A job's event history on disk ({@code events.jsonl} in its directory), so that it outlives the server: one JSON
 * object a line, {@code {"event":"step", <the StepEvent's fields>}} or {@code {"event":"end", <the EndEvent's
 * fields>}}, the fields named as on the event stream (snake case of the record components, so a field added to an
 * event is journaled with no change here). Lines are appended as events happen; {@link #sync} (at every checkpoint)
 * and {@link #close} (at the end of a run) force them to the device.
 *
 * <p>Across runs: a resumed run continues the same journal. {@link #open} reads it back into a fresh
 * {@link JobEventLog} — the consecutive steps from the first, without earlier runs' end events — and cuts off a line
 * left half-written by a kill; the steps the new run recomputes after its checkpoint are already there (a resume is
 * bit-identical) and are not written again. The file is readable by its owner only.
 *
 * <p>Not thread safe: the metrics hub is its only user.
 */
public final class EventJournal implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    private static final String KIND = "event";

    private final Path file;
    private final FileChannel channel;
    private final JobEventLog log;

    private EventJournal(Path file, FileChannel channel, JobEventLog log) {
        this.file = file;
        this.channel = channel;
        this.log = log;
    }

    /**
     * Opens (or creates) {@code file} for appending, with the steps it holds already in the returned {@link #log()}.
     *
     * @param capacity most steps the job has (its plan's total steps)
     */
    public static EventJournal open(Path file, long capacity) throws IOException {
        JobEventLog log = new JobEventLog(capacity);
        long keep = 0;
        if (Files.exists(file)) {
            byte[] bytes = Files.readAllBytes(file);
            int start = 0;
            for (int i = 0; i < bytes.length; i++) {
                if (bytes[i] != '\n') {
                    continue;
                }
                Optional<StepEvent> step = parseStep(new String(bytes, start, i - start, StandardCharsets.UTF_8));
                if (step.isPresent() && (log.size() == 0 || step.get().step() == lastStep(log) + 1)
                        && log.size() < capacity) {
                    log.append(step.get());
                }
                start = i + 1;
                keep = start;
            }
        }
        Set<StandardOpenOption> options = Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileChannel channel = FileSystems.getDefault().supportedFileAttributeViews().contains("posix")
                ? FileChannel.open(file, options, ownerOnly()) : FileChannel.open(file, options);
        channel.truncate(keep); // a line cut short by a kill is dropped
        channel.position(keep);
        return new EventJournal(file, channel, log);
    }

    /** The history read back and kept up to date by {@link #append}: every step from the first, in order. */
    public JobEventLog log() {
        return log;
    }

    public Path file() {
        return file;
    }

    /**
     * Records {@code event} in the log and on disk, unless it is a step the history already holds (a resumed run
     * recomputing the steps after its checkpoint). Returns whether it was new.
     */
    public boolean append(JobEvent event) throws IOException {
        switch (event) {
            case StepEvent step -> {
                if (log.size() > 0 && step.step() <= lastStep(log)) {
                    return false;
                }
                write(step, "step");
                log.append(step);
            }
            case EndEvent end -> {
                write(end, "end");
                log.end(end);
            }
        }
        return true;
    }

    /** Forces every line written so far to the device (called before each checkpoint). */
    public void sync() throws IOException {
        channel.force(false);
    }

    @Override
    public void close() throws IOException {
        try {
            sync();
        } finally {
            channel.close();
        }
    }

    /**
     * The steps {@code file} holds, read only (it may be appended to meanwhile, by the member that runs the job): the
     * consecutive steps from the first, as {@link #open} reads them back; a last line without its newline is not read.
     * Empty when there is no such file.
     */
    public static List<StepEvent> readSteps(Path file) throws IOException {
        List<StepEvent> steps = new ArrayList<>();
        if (!Files.isRegularFile(file)) {
            return steps;
        }
        byte[] bytes = Files.readAllBytes(file);
        int start = 0;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == '\n') {
                Optional<StepEvent> step = parseStep(new String(bytes, start, i - start, StandardCharsets.UTF_8));
                if (step.isPresent() && (steps.isEmpty() || step.get().step() == steps.getLast().step() + 1)) {
                    steps.add(step.get());
                }
                start = i + 1;
            }
        }
        return steps;
    }

    /** The end event of the last run written to {@code file}, if its last line is one (an ended, not killed, run). */
    public static Optional<EndEvent> lastEnd(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        List<String> lines = new ArrayList<>(Files.readAllLines(file, StandardCharsets.UTF_8));
        while (!lines.isEmpty() && lines.getLast().isBlank()) {
            lines.removeLast();
        }
        if (lines.isEmpty()) {
            return Optional.empty();
        }
        try {
            JsonNode node = JSON.readTree(lines.getLast());
            return "end".equals(node.path(KIND).asText()) ? Optional.of(JSON.treeToValue(strip(node), EndEvent.class))
                    : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private void write(Record event, String kind) throws IOException {
        ObjectNode node = JSON.createObjectNode().put(KIND, kind);
        node.setAll((ObjectNode) JSON.valueToTree(event));
        ByteBuffer line = ByteBuffer.wrap((JSON.writeValueAsString(node) + "\n").getBytes(StandardCharsets.UTF_8));
        while (line.hasRemaining()) {
            channel.write(line);
        }
    }

    private static Optional<StepEvent> parseStep(String line) {
        try {
            JsonNode node = JSON.readTree(line);
            return "step".equals(node.path(KIND).asText())
                    ? Optional.of(JSON.treeToValue(strip(node), StepEvent.class)) : Optional.empty();
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty(); // not a step (an end line, or a line of another version): skipped
        }
    }

    private static JsonNode strip(JsonNode node) {
        ObjectNode copy = ((ObjectNode) node).deepCopy();
        copy.remove(KIND);
        return copy;
    }

    private static long lastStep(JobEventLog log) {
        return log.get(log.size() - 1).step();
    }

    private static FileAttribute<?> ownerOnly() {
        return PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
    }
}
