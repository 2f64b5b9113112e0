package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.inference.Sampler;
import io.kdapack.inference.ServedModel;
import io.kdapack.training.RecallDatasets;
import io.kdapack.training.RecallEval;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class GenerateCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;
    /** A run of the real hybrid model (3 KDA + 1 MLA layers, MTP on), shrunk, trained on the recall task. */
    static Path run;
    static Path heldOut;

    @BeforeAll
    static void train() throws IOException {
        Path train = dir.resolve("data/recall-train");
        RecallDatasets.write(train, AssociativeRecall.demo(), 300, 1);
        heldOut = dir.resolve("data/recall-heldout");
        RecallDatasets.write(heldOut, AssociativeRecall.demo(), 80, 2);
        Path config = dir.resolve("tiny.yaml");
        Files.writeString(config, """
                model:
                  hidden_size: 32
                  intermediate_size: 64
                  kda: {num_heads: 2, num_v_heads: 2, head_dim: 16}
                  mla: {num_heads: 2, kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 8, v_head_dim: 8}
                train:
                  steps: 12
                  micro_batch_size: 2
                  num_microbatches: 1
                  seq_length: 96
                  optimizer: {lr: 0.01, min_lr: 0.001, warmup_steps: 0}
                  checkpoint: {interval: 12}
                  data: {prefix: %s}
                """.formatted(train.toAbsolutePath()));
        run = dir.resolve("run");
        Result r = kdapack("train", "--config", config.toString(), "--out", run.toString(), "--threads", "2");
        assertEquals(0, r.exit, r.err);
    }

    /**
     * Every held-out query the train command's recall eval scores becomes one prompt (its document up to the query's
     * key) with one greedy token. The eval counts an answer as recalled when the model gives it a probability above
     * ½; generate reports the greedy token and its log-probability at temperature 1, so the same count is the answers
     * generate gets right with a log-probability above ln ½, and the eval's figure must come out again. Greedy
     * generate's answers are the arg-max of one full forward over each prompt, and its log-probabilities that
     * forward's log-softmax.
     *
     * <p>A test can afford a dozen steps, after which the model recalls next to nothing (the eval's figure is near
     * 0); the full demo run (400 steps, 67 % recall in the README) is checked by hand, see docs/inference.md.
     */
    @Test
    void greedyGenerateReproducesTheRecallAccuracyOfTheTrainEval() throws IOException {
        JsonNode eval = JSON.readTree(run.resolve("eval.json").toFile());
        AssociativeRecall task = AssociativeRecall.demo();
        ServedModel served = ServedModel.load(run, null, 2);
        RecallEval evaluator = new RecallEval(task, served.config().train().seqLength(),
                served.config().train().microBatchSize(), served.model().mtpDepth());
        List<int[]> prompts = new ArrayList<>();
        List<Integer> answers = new ArrayList<>();
        for (MicroBatch batch : evaluator.batches(heldOut, TrainCommand.EVAL_ROWS)) {
            for (int p = 0; p < batch.size(); p++) {
                if (batch.lossMask()[p] != 0f) {
                    int start = p - batch.positionIds()[p];
                    prompts.add(Arrays.copyOfRange(batch.tokens(), start, p + 1));
                    answers.add(batch.labels()[p]);
                }
            }
        }
        assertEquals(eval.get("heldout_answers").asLong(), prompts.size());
        Path promptFile = dir.resolve("queries.jsonl");
        StringBuilder lines = new StringBuilder();
        for (int[] prompt : prompts) {
            lines.append(JSON.writeValueAsString(java.util.Map.of("ids", prompt))).append('\n');
        }
        Files.writeString(promptFile, lines);
        Path out = dir.resolve("answers.jsonl");
        Result r = kdapack("generate", "--run", run.toString(), "--prompt-ids", promptFile.toString(),
                "--max-tokens", "1", "--out", out.toString(), "--threads", "2");
        assertEquals(0, r.exit, r.err);

        List<String> outLines = Files.readAllLines(out);
        assertEquals(prompts.size(), outLines.size());
        int confident = 0;
        for (int i = 0; i < prompts.size(); i++) {
            JsonNode line = JSON.readTree(outLines.get(i));
            assertEquals(JSON.valueToTree(prompts.get(i)), line.get("prompt_ids"));
            int id = line.get("ids").get(0).asInt();
            double logprob = line.get("logprobs").get(0).asDouble();
            if (id == answers.get(i) && logprob > -Math.log(2)) {
                confident++;
            }
            float[] logits = fullForward(served, prompts.get(i));
            int vocab = served.config().model().vocabSize();
            int last = (prompts.get(i).length - 1) * vocab;
            assertEquals(Sampler.argMax(logits, last, vocab), id, "query " + i);
            assertEquals(Sampler.logProbability(logits, last, vocab, id), logprob, 1e-4, "query " + i);
        }
        assertEquals(eval.get("recall_accuracy").asDouble(), confident / (double) prompts.size(), 1e-12);
    }

    @Test
    void aTextPromptGoesThroughTheTokenizerAndBadInputNamesItsSource() throws IOException {
        // The demo vocabulary has 131 ids: bytes below 131 are valid ids, so ASCII text is a valid prompt.
        Result text = kdapack("generate", "--run", run.toString(), "--prompt", "AB", "--max-tokens", "3",
                "--temperature", "1", "--seed", "5");
        assertEquals(0, text.exit, text.err);
        JsonNode line = JSON.readTree(text.out);
        assertEquals(JSON.valueToTree(new int[] {65, 66}), line.get("prompt_ids"));
        assertEquals(3, line.get("ids").size());
        assertEquals(3, line.get("logprobs").size());
        Result again = kdapack("generate", "--run", run.toString(), "--prompt", "AB", "--max-tokens", "3",
                "--temperature", "1", "--seed", "5", "--threads", "1");
        assertEquals(text.out, again.out, "same seed, another thread count: the same tokens");

        Result highByte = kdapack("generate", "--run", run.toString(), "--prompt", "é", "--max-tokens", "1");
        assertEquals(Main.EXIT_BAD_INPUT, highByte.exit);
        assertTrue(highByte.err.contains("--prompt: prompt: token id 195 at index 0 is outside the model's vocabulary"),
                highByte.err);

        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"ids\": [1, 2]}\n\n{\"ids\": [1, \"x\"]}\n");
        Result badIds = kdapack("generate", "--run", run.toString(), "--prompt-ids", bad.toString(), "--max-tokens", "1");
        assertEquals(Main.EXIT_BAD_INPUT, badIds.exit);
        assertTrue(badIds.err.contains("line 3: ids[1] must be an integer, got \"x\""), badIds.err);

        Result noStep = kdapack("generate", "--run", run.toString(), "--step", "7", "--prompt", "A", "--max-tokens", "1");
        assertEquals(Main.EXIT_BAD_INPUT, noStep.exit);
        assertTrue(noStep.err.contains("--step 7: no checkpoint"), noStep.err);

        Result zero = kdapack("generate", "--run", run.toString(), "--prompt", "A", "--max-tokens", "0");
        assertEquals(Main.EXIT_BAD_INPUT, zero.exit);
        assertTrue(zero.err.contains("max_tokens must be >= 1, got 0"), zero.err);
    }

    private static float[] fullForward(ServedModel served, int[] tokens) {
        int n = tokens.length;
        int[] positions = new int[n];
        int[] segments = new int[n];
        for (int i = 0; i < n; i++) {
            positions[i] = i;
            segments[i] = 1;
        }
        return served.model().logits(new MicroBatch(1, n, tokens, new int[n], new float[n], positions, segments, null,
                null));
    }

    private record Result(int exit, String out, String err) {
    }

    private static Result kdapack(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }
}
