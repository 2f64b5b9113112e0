package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.training.RecallDatasets;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class TrainCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A recall dataset with its held-out companion and a config of {@code steps} tiny steps on it. */
    private static Path setUp(Path dir, int steps) throws IOException {
        Path train = dir.resolve("data/recall-train");
        RecallDatasets.write(train, AssociativeRecall.demo(), 300, 1);
        RecallDatasets.write(dir.resolve("data/recall-heldout"), AssociativeRecall.demo(), 40, 2);
        Path config = dir.resolve("tiny.yaml");
        Files.writeString(config, """
                train:
                  steps: %d
                  micro_batch_size: 2
                  num_microbatches: 2
                  seq_length: 64
                  optimizer: {lr: 0.1, min_lr: 0.01, warmup_steps: 0}
                  checkpoint: {interval: 2}
                  data: {prefix: %s}
                """.formatted(steps, train.toAbsolutePath()));
        return config;
    }

    @Test
    void trainsAndLeavesMetricsPlotCheckpointAndEvalInTheRunDirectory(@TempDir Path dir) throws IOException {
        Path config = setUp(dir, 4);
        Path run = dir.resolve("run");
        Result r = run("train", "--config", config.toString(), "--out", run.toString(), "--threads", "2");
        assertEquals(0, r.exit, r.err);

        List<JsonNode> metrics = metrics(run);
        assertEquals(List.of(1L, 2L, 3L, 4L), metrics.stream().map(m -> m.get("step").asLong()).toList());
        for (String field : List.of("loss", "mtp_loss", "tokens", "segments", "grad_norm", "lr", "tokens_per_s")) {
            assertTrue(metrics.get(0).get(field).isNumber(), field + " in " + metrics.get(0));
        }
        assertEquals(2 * 2 * 64, metrics.get(0).get("tokens").asLong());
        byte[] png = Files.readAllBytes(run.resolve("loss.png"));
        assertEquals((byte) 0x89, png[0]);
        assertEquals('P', png[1]);
        assertTrue(Files.isDirectory(run.resolve("checkpoints/step-00000002")));
        assertTrue(Files.isDirectory(run.resolve("checkpoints/step-00000004")));
        assertTrue(r.err.contains("step 4/4"), r.err);

        JsonNode summary = JSON.readTree(r.out);
        assertEquals(4, summary.get("steps").asLong());
        assertTrue(summary.get("heldout_answers").asLong() > 0, r.out);
        double answerLoss = summary.get("heldout_answer_loss").asDouble();
        assertTrue(answerLoss > 0 && Double.isFinite(answerLoss), r.out);
        JsonNode eval = JSON.readTree(run.resolve("eval.json").toFile());
        assertEquals(answerLoss, eval.get("heldout_answer_loss").asDouble());
        assertTrue(eval.get("heldout_none_answers").asLong() > 0, eval.toString());
        // A unigram model has no context: each held-out document's loss packed is exactly its loss alone.
        assertEquals(0.0, summary.get("packed_vs_alone_rel_err").asDouble(), r.out);
        assertEquals(0.0, eval.get("packed_vs_alone_rel_err").asDouble());
        assertEquals(40, eval.get("packed_vs_alone_documents").asInt(), "every held-out document, packed and alone");
        assertTrue(JSON.readTree(run.resolve("config.json").toFile()).at("/train/steps").asInt() == 4);
    }

    @Test
    void aBlendWithValidationLogsValLossAfterMegatronsSteps(@TempDir Path dir) throws IOException {
        Path first = dir.resolve("data/a");
        Path second = dir.resolve("data/b");
        RecallDatasets.write(first, AssociativeRecall.demo(), 300, 1);
        RecallDatasets.write(second, AssociativeRecall.demo(), 200, 5);
        Path config = dir.resolve("blend.yaml");
        Files.writeString(config, """
                train:
                  steps: 5
                  micro_batch_size: 2
                  num_microbatches: 2
                  seq_length: 32
                  eval_interval: 2
                  eval_iters: 1
                  optimizer: {lr: 0.1, min_lr: 0.01, warmup_steps: 0}
                  checkpoint: {interval: 0}
                  data:
                    split: 90,10,0
                    blend:
                      - {weight: 2, prefix: %s}
                      - {weight: 1, prefix: %s}
                """.formatted(first.toAbsolutePath(), second.toAbsolutePath()));
        Path run = dir.resolve("run");
        Result r = run("train", "--config", config.toString(), "--out", run.toString(), "--threads", "1");
        assertEquals(0, r.exit, r.err);
        List<JsonNode> metrics = metrics(run);
        // Evaluations after steps 2 and 4 (multiples of eval_interval) and after the last step, 5.
        assertEquals(List.of(2L, 4L, 5L), metrics.stream().filter(m -> m.has("val_loss"))
                .map(m -> m.get("step").asLong()).toList());
        for (JsonNode m : metrics) {
            if (m.has("val_loss")) {
                assertTrue(m.get("val_loss").asDouble() > 0 && m.get("val_mtp_loss").asDouble() > 0, m.toString());
            }
        }
        assertTrue(r.err.contains("validation loss at step 4: "), r.err);
        JsonNode summary = JSON.readTree(r.out);
        assertEquals(metrics.get(4).get("val_loss").asDouble(), summary.get("final_val_loss").asDouble());
        assertFalse(summary.has("heldout_answers"), "no held-out recall eval for a blend");
        assertTrue(Files.size(run.resolve("loss.png")) > 0);
    }

    /** The main job end to end on the real hybrid model (3 KDA + 1 MLA layers, MTP on), shrunk to two steps. */
    @Test
    void aTwoStepConfigTrainsTheHybridModel(@TempDir Path dir) throws IOException {
        Path train = dir.resolve("data/recall-train");
        RecallDatasets.write(train, AssociativeRecall.demo(), 100, 1);
        RecallDatasets.write(dir.resolve("data/recall-heldout"), AssociativeRecall.demo(), 20, 2);
        Path config = dir.resolve("two-steps.yaml");
        Files.writeString(config, """
                model:
                  hidden_size: 32
                  intermediate_size: 64
                  kda: {num_heads: 2, num_v_heads: 2, head_dim: 16}
                  mla: {num_heads: 2, kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 8, v_head_dim: 8}
                train:
                  steps: 2
                  micro_batch_size: 2
                  num_microbatches: 2
                  seq_length: 64
                  optimizer: {warmup_steps: 0}
                  data: {prefix: %s}
                """.formatted(train.toAbsolutePath()));
        Path run = dir.resolve("run");
        Result r = run(new TrainCommand(), "train", "--config", config.toString(), "--out", run.toString());
        assertEquals(0, r.exit, r.err);
        List<JsonNode> metrics = metrics(run);
        assertEquals(2, metrics.size());
        for (JsonNode step : metrics) {
            assertTrue(step.get("loss").asDouble() > 0 && step.get("mtp_loss").asDouble() > 0, step.toString());
            assertTrue(step.get("grad_norm").asDouble() > 0, step.toString());
        }
        // Near-uniform predictions at initialisation: about ln 132.
        assertEquals(Math.log(132), metrics.get(0).get("loss").asDouble(), 0.2);
        assertTrue(Files.isRegularFile(run.resolve("checkpoints/step-00000002/model.safetensors")));
        assertTrue(Files.isRegularFile(run.resolve("loss.png")));
        JsonNode summary = JSON.readTree(r.out);
        assertTrue(summary.get("heldout_answers").asLong() > 0, r.out);
        // With isolation a held-out document's loss packed equals its loss alone up to float32 summation order (the
        // project's packing bar, 1e-5); without, it depends on the documents before it in its row.
        double isolated = summary.get("packed_vs_alone_rel_err").asDouble();
        assertTrue(isolated <= 1e-5, r.out);
        Result leaky = run(new TrainCommand(), "train", "--config", config.toString(), "--out",
                dir.resolve("leaky").toString(), "--no-isolation");
        assertEquals(0, leaky.exit, leaky.err);
        double leak = JSON.readTree(leaky.out).get("packed_vs_alone_rel_err").asDouble();
        System.out.println("packed_vs_alone_rel_err: isolated " + isolated + ", no isolation " + leak);
        assertTrue(leak > 1e-3, leaky.out);
    }

    /**
     * {@code kdapack train} runs the hybrid model with the isolation asked for, in that polarity. Two runs train on the
     * same data; their held-out sets hold the same recall documents, each after a filler document (keys only, no
     * answers) that differs between the two. With isolation the answers cannot see the filler: the held-out answer loss
     * agrees to rounding (1e-6). With {@code --no-isolation} each row is one sequence, the answers see the filler before them,
     * and the loss differs. A model built with the flag inverted fails both.
     */
    @Test
    void trainRunsTheHybridModelWithTheIsolationAskedFor(@TempDir Path dir) throws IOException {
        for (boolean isolation : new boolean[] {true, false}) {
            double[] answerLoss = new double[2];
            for (int variant = 0; variant < 2; variant++) {
                Path data = dir.resolve((isolation ? "on" : "off") + variant);
                Path config = hybridConfig(data, 1);
                writeHeldOutAfterFillers(data.resolve("data/recall-heldout"), variant);
                List<String> args = new java.util.ArrayList<>(List.of("train", "--config", config.toString(),
                        "--out", data.resolve("run").toString()));
                if (!isolation) {
                    args.add("--no-isolation");
                }
                Result r = run(new TrainCommand(), args.toArray(String[]::new));
                assertEquals(0, r.exit, r.err);
                JsonNode eval = JSON.readTree(data.resolve("run/eval.json").toFile());
                assertEquals(isolation, eval.get("isolation").asBoolean());
                assertTrue(eval.get("heldout_answers").asLong() > 20, eval.toString());
                answerLoss[variant] = eval.get("heldout_answer_loss").asDouble();
            }
            // KDA's chunks run over the packed axis, so a document's rounding depends on where it starts: with isolation
            // the two losses agree to float rounding (the op's packed-vs-alone bound, 1e-6), not bit for bit. Without
            // it the filler's keys reach the answers, which moves the loss by far more than that.
            double relativeDifference = Math.abs(answerLoss[0] - answerLoss[1]) / Math.abs(answerLoss[0]);
            if (isolation) {
                assertTrue(relativeDifference <= 1e-6, "isolation: the fillers cannot reach the answers, relative "
                        + "difference " + relativeDifference);
            } else {
                assertTrue(relativeDifference > 1e-4, "no isolation: the answers see the filler before them, relative "
                        + "difference " + relativeDifference);
            }
        }
    }

    /** A recall training set under {@code dir/data} and the tiny hybrid model's config of {@code steps} steps on it. */
    private static Path hybridConfig(Path dir, int steps) throws IOException {
        Path train = dir.resolve("data/recall-train");
        RecallDatasets.write(train, AssociativeRecall.demo(), 100, 1);
        Path config = dir.resolve("hybrid.yaml");
        Files.writeString(config, """
                model:
                  hidden_size: 32
                  intermediate_size: 64
                  kda: {num_heads: 2, num_v_heads: 2, head_dim: 16}
                  mla: {num_heads: 2, kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 8, v_head_dim: 8}
                train:
                  steps: %d
                  micro_batch_size: 2
                  num_microbatches: 2
                  seq_length: 64
                  optimizer: {warmup_steps: 0}
                  data: {prefix: %s}
                """.formatted(steps, train.toAbsolutePath()));
        return config;
    }

    /**
     * Held-out documents: 24 recall documents (the same whatever {@code variant}), each after a filler of 8 keys and
     * EOD whose keys depend on {@code variant}; fillers hold no QUERY, so no answer.
     */
    private static void writeHeldOutAfterFillers(Path prefix, int variant) throws IOException {
        AssociativeRecall task = AssociativeRecall.demo();
        try (var builder = new io.kdapack.data.indexed.IndexedDatasetBuilder(prefix,
                io.kdapack.data.indexed.TokenDType.forVocabulary(task.vocabularySize()))) {
            List<int[]> recall = task.documents(2, 24);
            for (int d = 0; d < recall.size(); d++) {
                int[] filler = new int[9];
                for (int i = 0; i < 8; i++) {
                    filler[i] = (3 * d + 5 * i + 29 * variant) % 64;
                }
                filler[8] = task.eodId();
                builder.addDocument(filler);
                builder.addDocument(recall.get(d));
            }
            builder.finish();
        }
    }

    @Test
    void resumeContinuesTheRunBitIdentically(@TempDir Path dir) throws IOException {
        Path config = setUp(dir, 4);
        Path straight = dir.resolve("straight");
        assertEquals(0, run("train", "--config", config.toString(), "--out", straight.toString()).exit);

        Path interrupted = dir.resolve("interrupted");
        assertEquals(0, run("train", "--config", config.toString(), "--out", interrupted.toString()).exit);
        // Interrupt after step 2: drop the last checkpoint and the metrics after step 3 (a crash mid-step 4).
        deleteRecursively(interrupted.resolve("checkpoints/step-00000004"));
        List<String> lines = Files.readAllLines(interrupted.resolve("metrics.jsonl"));
        Files.write(interrupted.resolve("metrics.jsonl"), lines.subList(0, 3));

        Result resumed = run("train", "--config", config.toString(), "--out", interrupted.toString(), "--resume",
                "--threads", "1");
        assertEquals(0, resumed.exit, resumed.err);
        assertTrue(resumed.err.contains("resumed at step 2"), resumed.err);
        assertEquals(losses(straight), losses(interrupted), "steps 3 and 4 again, bit-identical");
    }

    @Test
    void badUseEndsInOneLineAndExitCode2(@TempDir Path dir) throws IOException {
        Path config = setUp(dir, 4);
        Path run = dir.resolve("run");
        assertTrue(run("train", "--config", config.toString(), "--out", run.toString(), "--steps", "1").exit == 0);
        Result again = run("train", "--config", config.toString(), "--out", run.toString(), "--steps", "1");
        assertEquals(Main.EXIT_BAD_INPUT, again.exit);
        assertTrue(again.err.contains("already holds checkpoints"), again.err);

        Result noCheckpoint = run("train", "--config", config.toString(), "--out", dir.resolve("empty").toString(),
                "--resume");
        assertEquals(Main.EXIT_BAD_INPUT, noCheckpoint.exit);
        assertTrue(noCheckpoint.err.contains("no complete checkpoint"), noCheckpoint.err);

        Result otherConfig = run("train", "--config", config.toString(), "--out", run.toString(), "--resume",
                "--steps", "3");
        assertEquals(Main.EXIT_BAD_INPUT, otherConfig.exit);
        assertTrue(otherConfig.err.contains("different configuration"), otherConfig.err);

        Files.writeString(config, "train: {data: {prefix: " + dir.resolve("missing").toAbsolutePath() + "}}\n");
        Result missing = run("train", "--config", config.toString(), "--out", dir.resolve("m").toString());
        assertEquals(Main.EXIT_BAD_INPUT, missing.exit);
        assertTrue(missing.err.contains("missing.idx") && missing.err.contains("kdapack data synth"), missing.err);
        assertFalse(missing.err.contains("\tat "), "no stack trace: " + missing.err);
    }

    private static List<Double> losses(Path run) throws IOException {
        return metrics(run).stream().map(m -> m.get("loss").asDouble()).toList();
    }

    private static List<JsonNode> metrics(Path run) throws IOException {
        return Files.readAllLines(run.resolve("metrics.jsonl")).stream().map(line -> {
            try {
                return JSON.readTree(line);
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }).toList();
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    private record Result(int exit, String out, String err) {
    }

    private static Result run(String... args) {
        return run(new TrainCommand(UnigramModel.FACTORY), args);
    }

    private static Result run(TrainCommand command, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        // The train command alone, under Main's error handling.
        CommandLine cli = new CommandLine(command);
        cli.setExecutionExceptionHandler(Main.commandLine().getExecutionExceptionHandler());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        if (!args[0].equals("train")) {
            throw new IllegalArgumentException("only the train command runs here, got " + args[0]);
        }
        int exit = cli.execute(java.util.Arrays.copyOfRange(args, 1, args.length));
        return new Result(exit, out.toString(), err.toString());
    }
}
