package io.kdapack.cli.train;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kdapack.cli.train.LossPlot;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.training.StepResult;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The files of one {@code kdapack train} run:
 * <pre>
 *   DIR/config.json      the configuration the run used (every key, defaults included)
 *   DIR/metrics.jsonl    one JSON line per optimizer step ({@link StepResult#toJson()})
 *   DIR/loss.png         the loss curves
 *   DIR/eval.json        the held-out recall eval
 *   DIR/checkpoints/     step-NNNNNNNN checkpoints (io.kdapack.training.checkpoint.CheckpointStore)
 * </pre>
 */
public final class RunDirectory implements AutoCloseable {
    static final String CONFIG = "config.json";
    static final String METRICS = "metrics.jsonl";
    static final String PLOT = "loss.png";
    static final String EVAL = "eval.json";
    static final String CHECKPOINTS = "checkpoints";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Path dir;
    private final List<JsonNode> metrics;
    private final BufferedWriter metricsOut;

    private RunDirectory(Path dir, List<JsonNode> metrics) throws IOException {
        this.dir = dir;
        this.metrics = metrics;
        StringBuilder kept = new StringBuilder();
        for (JsonNode line : metrics) {
            kept.append(line.toString()).append('\n');
        }
        SafeTensors.writeAtomically(dir.resolve(METRICS), kept.toString().getBytes(StandardCharsets.UTF_8));
        this.metricsOut = Files.newBufferedWriter(dir.resolve(METRICS), StandardOpenOption.APPEND);
    }

    /** A run directory, created if needed; the metrics of steps after {@code keepThroughStep} are dropped. */
    public static RunDirectory open(Path dir, long keepThroughStep) throws IOException {
        Files.createDirectories(dir);
        List<JsonNode> metrics = new ArrayList<>();
        Path file = dir.resolve(METRICS);
        if (keepThroughStep > 0 && Files.isRegularFile(file)) {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode node;
                try {
                    node = JSON.readTree(line);
                } catch (IOException e) {
                    // A line cut short by a crash is the only way a line can be unreadable; the steps after it rerun.
                    break;
                }
                if (node.path("step").asLong() <= keepThroughStep) {
                    metrics.add(node);
                }
            }
        }
        return new RunDirectory(dir, metrics);
    }

    /** The newest run under {@code runs} that holds checkpoints, for {@code --resume} without {@code --out}. */
    public static Path newestWithCheckpoints(Path runs) throws IOException {
        if (!Files.isDirectory(runs)) {
            throw new IOException("--resume: no run directory " + runs + " (give the run with --out)");
        }
        try (Stream<Path> entries = Files.list(runs)) {
            return entries.filter(p -> Files.isDirectory(p.resolve(CHECKPOINTS)))
                    .max((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString()))
                    .orElseThrow(() -> new IOException("--resume: no run with checkpoints under " + runs
                            + " (give the run with --out)"));
        }
    }

    public Path path() {
        return dir;
    }

    public Path checkpoints() {
        return dir.resolve(CHECKPOINTS);
    }

    public void writeConfig(KdapackConfig config) throws IOException {
        SafeTensors.writeAtomically(dir.resolve(CONFIG), JSON.writeValueAsBytes(config.toMap()));
    }

    /** Appends one step's line to {@code metrics.jsonl} (flushed, so a crash loses at most the line being written). */
    public void record(StepResult step) throws IOException {
        String line = step.toJson();
        metrics.add(JSON.readTree(line));
        metricsOut.write(line);
        metricsOut.write('\n');
        metricsOut.flush();
    }

    /** Steps recorded so far, this run and the part of an earlier run it continues. */
    public List<JsonNode> metrics() {
        return List.copyOf(metrics);
    }

    /**
     * Draws {@code loss.png}: the loss and (when present) the MTP loss against the step, and the validation losses at
     * the steps that were evaluated.
     */
    public Path writePlot(String title) throws IOException {
        double[] steps = metrics.stream().mapToDouble(m -> m.path("step").asDouble()).toArray();
        LossPlot plot = new LossPlot(title)
                .add(new LossPlot.Series("loss", steps, metrics.stream().mapToDouble(m -> m.path("loss").asDouble()).toArray()));
        if (metrics.stream().anyMatch(m -> m.path("mtp_loss").isNumber())) {
            plot.add(new LossPlot.Series("mtp_loss", steps,
                    metrics.stream().mapToDouble(m -> m.path("mtp_loss").asDouble(Double.NaN)).toArray()));
        }
        List<JsonNode> evaluated = metrics.stream().filter(m -> m.path("val_loss").isNumber()).toList();
        if (!evaluated.isEmpty()) {
            double[] at = evaluated.stream().mapToDouble(m -> m.path("step").asDouble()).toArray();
            plot.add(new LossPlot.Series("val_loss", at,
                    evaluated.stream().mapToDouble(m -> m.path("val_loss").asDouble()).toArray(), true));
            if (evaluated.stream().anyMatch(m -> m.path("val_mtp_loss").isNumber())) {
                plot.add(new LossPlot.Series("val_mtp_loss", at,
                        evaluated.stream().mapToDouble(m -> m.path("val_mtp_loss").asDouble(Double.NaN)).toArray(), true));
            }
        }
        Path file = dir.resolve(PLOT);
        plot.write(file);
        return file;
    }

    public void writeEval(Map<String, Object> eval) throws IOException {
        SafeTensors.writeAtomically(dir.resolve(EVAL), JSON.writeValueAsBytes(eval));
    }

    @Override
    public void close() throws IOException {
        metricsOut.close();
    }
}
