package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.inference.ServedModel;
import io.kdapack.training.RecallEval;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class GenerateCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The shipped demo training set (the tests run in the module's directory, one below the repository root). */
    private static final Path DEMO_TRAIN = Path.of("").toAbsolutePath().getParent().resolve("datasets/mqar/mqar-train");
    /**
     * Steps of the short demo run: enough that the model is sure (p > ½) of some held-out answers and not of others
     * (about 15 % recalled, all of them {@code NONE}), so that the per-query comparison below is not vacuous.
     */
    private static final int SHORT_DEMO_STEPS = 30;
    /**
     * A system property naming a finished demo run directory to check instead of training the short one: the manual
     * check of docs/inference.md on the full run ({@code scripts/generate-recall.sh}).
     */
    static final String RUN_PROPERTY = "kdapack.recall.run";
    /**
     * Bound on {@code |ln p_generate − ln p_eval|} for one token at one query. Both are float32 forwards of the same
     * weights over the same document, summed in different orders: generate's prefill runs the document alone with
     * KDA's chunks aligned to it and MLA through the absorbed latent cache, the eval runs it packed in a row with KDA's
     * chunks over the packed axis and MLA's per-head keys and values. The model's inference tests find the logits'
     * relative difference ≤ 6e-7 (bound 1e-5); a log-softmax moves by at most twice the largest logit difference.
     * Seen: ≤ 1e-6 on the short run and on the full demo run (docs/inference.md); the bound leaves 20×.
     */
    private static final double LOG_PROB_TOLERANCE = 2e-5;

    @TempDir
    static Path dir;
    /** The demo configuration (defaults: 3 KDA + 1 MLA layers, MTP on, the shipped dataset), trained briefly. */
    static Path run;
    /** Whether {@link #run} is the short run trained here (not one given by {@value #RUN_PROPERTY}). */
    static boolean shortRun;

    @BeforeAll
    static void train() throws IOException {
        String given = System.getProperty(RUN_PROPERTY, "");
        if (!given.isBlank()) {
            run = Path.of(given).toAbsolutePath();
            return;
        }
        shortRun = true;
        Path config = dir.resolve("demo.yaml");
        Files.writeString(config, "train: {data: {prefix: " + DEMO_TRAIN + "}}\n");
        run = dir.resolve("run");
        Result r = kdapack("train", "--config", config.toString(), "--steps", Integer.toString(SHORT_DEMO_STEPS),
                "--out", run.toString(), "--threads", "2");
        assertEquals(0, r.exit, r.err);
    }

    /**
     * Greedy {@code kdapack generate} answers the held-out recall queries with the accuracy that {@code kdapack train}'s
     * eval reports, query by query.
     *
     * <p>The eval ({@link RecallEval}) packs whole held-out documents side by side into rows and scores, at each answer
     * (a value or {@code NONE}, always one token), the cross-entropy of the right answer given the row so far; an
     * answer counts as recalled when its probability is above ½. With isolation a document's predictions see nothing of
     * the documents before it in its row, so the same query asked of {@code generate} is the document alone, up to and
     * including the queried key, with as many tokens to generate as the answer has: one. That the two agree is the
     * project's point: a document packed is the document alone.
     *
     * <p>Probability above ½ is a criterion on the answer, not on the arg-max; for one query: if the model gives the
     * answer p > ½, it is the arg-max, greedy generate picks it and reports {@code ln p > ln ½}; conversely a generated
     * answer with log-probability above {@code ln ½} has p > ½. So generate's verdict (greedy token = answer and its
     * log-probability > ln ½) equals the eval's, except where the two forwards' rounding (≤ {@link #LOG_PROB_TOLERANCE})
     * puts {@code ln p} on the two sides of {@code ln ½}: those queries are counted, and the accuracies may differ by
     * at most their share of the queries. Likewise generate's token is the arg-max of the eval's logits at that
     * position unless the two largest are within twice the tolerance of each other, and its log-probability is the
     * eval's log-softmax there; the eval's logits are checked to be the ones it scored (their cross-entropy at the
     * answer is its loss).
     *
     * <p>The eval here is {@code kdapack train}'s own ({@link TrainCommand#recallEval}) on the run's checkpoint, which
     * must give the figures of the run's {@code eval.json} exactly.
     */
    @Test
    void greedyGenerateAnswersTheHeldOutQueriesWithTheAccuracyOfTheTrainEval() throws IOException {
        JsonNode eval = JSON.readTree(run.resolve("eval.json").toFile());
        assertTrue(eval.get("isolation").asBoolean(), "the demo trains with isolation");
        Path heldOut = Path.of(eval.get("heldout").asText());
        AssociativeRecall task = AssociativeRecall.demo();
        ServedModel served = ServedModel.load(run, null, 2);
        HybridModel model = served.model();
        int vocab = served.config().model().vocabSize();

        // The train command's eval of the checkpoint, query by query.
        RecallEval evaluator = TrainCommand.recallEval(served.config(), model.mtpDepth());
        List<MicroBatch> batches = evaluator.batches(heldOut, TrainCommand.EVAL_ROWS);
        Function<MicroBatch, LanguageModel.Output> forward = batch -> model.run(batch, null);
        RecallEval.Result scored = evaluator.score(batches, forward);
        assertEquals(eval.get("heldout_answers").asLong(), scored.answers());
        assertEquals(eval.get("heldout_answer_loss").asDouble(), scored.answerLoss(), "the checkpoint is the run's model");
        assertEquals(eval.get("recall_accuracy").asDouble(), scored.recallAccuracy());
        assertEquals(eval.get("bound_recall").asDouble(), scored.boundRecall());
        assertEquals(eval.get("none_recall").asDouble(), scored.noneRecall());
        List<RecallEval.Query> queries = evaluator.queries(batches, forward);
        assertEquals(scored.answers(), queries.size());
        assertEquals(scored.recallAccuracy(), queries.stream().filter(RecallEval.Query::recalled).count()
                / (double) queries.size(), "the verdicts are the ones the eval counts");
        assertEquals(documentQueries(task, heldOut, scored.documents()), queries.stream()
                .map(q -> Arrays.toString(q.prompt()) + " -> " + q.answer()).toList(),
                "each query is its document up to the queried key, in file order");
        List<float[]> evalLogits = batches.stream().map(model::logits).toList();

        Path promptFile = dir.resolve("queries.jsonl");
        StringBuilder lines = new StringBuilder();
        for (RecallEval.Query q : queries) {
            lines.append(JSON.writeValueAsString(Map.of("ids", q.prompt()))).append('\n');
        }
        Files.writeString(promptFile, lines);
        Path out = dir.resolve("answers.jsonl");
        Result r = kdapack("generate", "--run", run.toString(), "--prompt-ids", promptFile.toString(),
                "--max-tokens", "1", "--out", out.toString(), "--threads", "2");
        assertEquals(0, r.exit, r.err);
        List<String> answerLines = Files.readAllLines(out);
        assertEquals(queries.size(), answerLines.size());

        double logProbThreshold = -Math.log(2);
        int recalled = 0;
        int noneRecalled = 0;
        int greedyRight = 0;
        int borderline = 0;
        int nearTies = 0;
        double worstLogProb = 0;
        double worstEvalLoss = 0;
        for (int i = 0; i < queries.size(); i++) {
            RecallEval.Query q = queries.get(i);
            String where = "query " + i + " " + Arrays.toString(q.prompt()) + " -> " + q.answer();
            JsonNode line = JSON.readTree(answerLines.get(i));
            assertEquals(JSON.valueToTree(q.prompt()), line.get("prompt_ids"), where);
            assertEquals(1, line.get("ids").size(), where);
            assertEquals(1, line.get("logprobs").size(), where);
            int id = line.get("ids").get(0).asInt();
            double logProb = line.get("logprobs").get(0).asDouble();

            double[] evalLogSoftmax = logSoftmax(evalLogits.get(q.batch()), q.position() * vocab, vocab);
            worstEvalLoss = Math.max(worstEvalLoss, Math.abs(-evalLogSoftmax[q.answer()] - q.loss()));
            worstLogProb = Math.max(worstLogProb, Math.abs(logProb - evalLogSoftmax[id]));
            assertEquals(evalLogSoftmax[id], logProb, LOG_PROB_TOLERANCE, where + ": generate's log-probability of "
                    + id + " is the eval's log-softmax");
            int[] top = topTwo(evalLogSoftmax);
            // Each log-probability may move by the tolerance: a margin above twice it keeps the arg-max.
            if (evalLogSoftmax[top[0]] - evalLogSoftmax[top[1]] > 2 * LOG_PROB_TOLERANCE) {
                assertEquals(top[0], id, where + ": greedy is the arg-max of the eval's logits");
            } else {
                nearTies++;
            }

            boolean generateRecalled = id == q.answer() && logProb > logProbThreshold;
            if (Math.abs(q.loss() - Math.log(2)) > LOG_PROB_TOLERANCE) {
                assertEquals(q.recalled(), generateRecalled, where + ": eval loss " + q.loss() + ", generated " + id
                        + " with log-probability " + logProb);
            } else {
                borderline++;
            }
            recalled += generateRecalled ? 1 : 0;
            noneRecalled += generateRecalled && q.answer() == task.noneId() ? 1 : 0;
            greedyRight += id == q.answer() ? 1 : 0;
        }
        // The eval's logits are what it scored: its loss is their log-softmax at the answer, in float64 as here, only
        // summed in another order (seen: 2e-15).
        assertTrue(worstEvalLoss <= 1e-9, "eval loss vs the eval logits' cross-entropy: " + worstEvalLoss);
        int n = queries.size();
        long none = scored.noneAnswers();
        System.out.printf(Locale.ROOT, "%s: %d held-out queries; generate recalls %d (%.2f %%; NONE %d of %d), eval "
                + "recall_accuracy %.4f %%; greedy right %d (%.2f %%); borderline %d, near ties %d; largest |logprob "
                + "difference| %.2e (eval loss vs its logits %.2e)%n", run, n, recalled, 100.0 * recalled / n, noneRecalled,
                none, 100 * scored.recallAccuracy(), greedyRight, 100.0 * greedyRight / n, borderline, nearTies,
                worstLogProb, worstEvalLoss);
        assertEquals(scored.recallAccuracy(), recalled / (double) n, borderline / (double) n + 1e-12);
        assertEquals(scored.noneRecall(), noneRecalled / (double) none, borderline / (double) none + 1e-12);
        assertEquals(scored.boundRecall(), (recalled - noneRecalled) / (double) (n - none),
                borderline / (double) (n - none) + 1e-12);
        if (shortRun) {
            assertTrue(recalled > 0 && recalled < n, "the short run recalls some answers and misses others: "
                    + recalled + " of " + n);
        }
    }

    /** The queries of the first {@code documents} documents of the dataset at {@code prefix}, as "prompt -> answer". */
    private static List<String> documentQueries(AssociativeRecall task, Path prefix, int documents) throws IOException {
        IndexedDataset dataset = IndexedDataset.open(prefix);
        List<String> queries = new ArrayList<>();
        for (int d = 0; d < documents; d++) {
            int[] document = dataset.sequence(d);
            boolean[] answer = task.answerPositions(document);
            for (int t = 0; t < document.length; t++) {
                if (answer[t]) {
                    queries.add(Arrays.toString(Arrays.copyOf(document, t)) + " -> " + document[t]);
                }
            }
        }
        return queries;
    }

    /** {@code ln softmax} of {@code logits[offset … offset+vocab)}, in float64. */
    private static double[] logSoftmax(float[] logits, int offset, int vocab) {
        double max = Double.NEGATIVE_INFINITY;
        for (int v = 0; v < vocab; v++) {
            max = Math.max(max, logits[offset + v]);
        }
        double sum = 0;
        for (int v = 0; v < vocab; v++) {
            sum += Math.exp(logits[offset + v] - max);
        }
        double logSum = max + Math.log(sum);
        double[] out = new double[vocab];
        for (int v = 0; v < vocab; v++) {
            out[v] = logits[offset + v] - logSum;
        }
        return out;
    }

    /** The ids of the largest and the second largest value (the lower id first among equals). */
    private static int[] topTwo(double[] values) {
        int first = 0;
        int second = -1;
        for (int v = 1; v < values.length; v++) {
            if (values[v] > values[first]) {
                second = first;
                first = v;
            } else if (second < 0 || values[v] > values[second]) {
                second = v;
            }
        }
        return new int[] {first, second};
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
