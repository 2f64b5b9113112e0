package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.model.MtpConfig;
import io.kdapack.core.nn.Parameter;
import io.kdapack.data.synthetic.AssociativeRecall;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RecallEvalTest {
    private static final AssociativeRecall TASK = AssociativeRecall.demo();

    @Test
    void packsWholeDocumentsAndScoresExactlyTheirAnswers(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("heldout");
        RecallDatasets.write(prefix, TASK, 30, 4);
        List<int[]> documents = TASK.documents(4, 30);
        RecallEval eval = new RecallEval(TASK, 128, 3, 1);
        List<MicroBatch> batches = eval.batches(prefix, 1000);

        // A document is its bindings, QUERY, a (key, answer) pair per query, EOD; all 30 fit rows of 129.
        long answers = documents.stream().mapToLong(d -> (d.length - 2 - queryAt(d)) / 2).sum();
        long noneAnswers = documents.stream().mapToLong(d -> Arrays.stream(d).filter(t -> t == TASK.noneId()).count())
                .sum();
        long maskedLabels = 0;
        long maskedNone = 0;
        for (MicroBatch b : batches) {
            for (int i = 0; i < b.size(); i++) {
                if (b.lossMask()[i] != 0f) {
                    maskedLabels++;
                    int label = b.labels()[i];
                    maskedNone += label == TASK.noneId() ? 1 : 0;
                    assertTrue(label >= 64 && label < 128 || label == TASK.noneId(),
                            "an answer is a value token or NONE, got " + label);
                    assertTrue(b.tokens()[i] < 64, "an answer follows its key, got " + b.tokens()[i]);
                }
                if (i % b.length() == 0) {
                    assertEquals(1, b.segmentIds()[i], "each row starts a new document");
                    assertEquals(0, b.positionIds()[i]);
                }
            }
            assertTrue(b.mtpLabels() != null, "MTP arrays present for an MTP model");
        }
        assertEquals(answers, maskedLabels);
        assertEquals(noneAnswers, maskedNone);
        assertTrue(noneAnswers > 0 && noneAnswers < answers, noneAnswers + " of " + answers);

        RecallEval.Result sure = eval.score(batches, constantLoss(0.1));
        assertEquals(30, sure.documents());
        assertEquals(answers, sure.answers());
        assertEquals(0.1, sure.answerLoss(), 1e-12);
        assertEquals(1.0, sure.recallAccuracy());
        assertEquals(1.0, sure.boundRecall());
        assertEquals(1.0, sure.noneRecall());
        RecallEval.Result unsure = eval.score(batches, constantLoss(Math.log(2) + 1e-9));
        assertEquals(0.0, unsure.recallAccuracy(), "probability ½ or less is not recall");
        assertEquals(0.0, eval.score(batches, constantLoss(Math.log(2))).recallAccuracy(), "probability ½ exactly");

        // Sure of NONE only: the NONE answers recalled, the values not.
        Function<MicroBatch, LanguageModel.Output> sureOfNone = batch -> {
            double[] loss = new double[batch.size()];
            for (int i = 0; i < loss.length; i++) {
                loss[i] = batch.labels()[i] == TASK.noneId() ? 0.1 : 2.0;
            }
            return new LanguageModel.Output(loss, 0, 0, null, 0, 0);
        };
        RecallEval.Result noneOnly = eval.score(batches, sureOfNone);
        assertEquals(noneAnswers, noneOnly.noneAnswers());
        assertEquals(1.0, noneOnly.noneRecall());
        assertEquals(0.0, noneOnly.boundRecall());
        assertEquals((double) noneAnswers / answers, noneOnly.recallAccuracy(), 1e-15);

        // Query by query, in file order: the document up to and including the queried key, the answer, the verdict.
        List<RecallEval.Query> queries = eval.queries(batches, sureOfNone);
        assertEquals(answers, queries.size());
        int q = 0;
        for (int[] document : documents) {
            boolean[] answer = TASK.answerPositions(document);
            for (int t = 0; t < document.length; t++) {
                if (answer[t]) {
                    RecallEval.Query query = queries.get(q++);
                    assertArrayEquals(Arrays.copyOf(document, t), query.prompt(), "query " + q);
                    assertEquals(document[t], query.answer());
                    assertEquals(document[t] == TASK.noneId(), query.recalled());
                    MicroBatch batch = batches.get(query.batch());
                    assertEquals(document[t - 1], batch.tokens()[query.position()], "the key is the input there");
                    assertEquals(document[t], batch.labels()[query.position()], "the answer is the label there");
                }
            }
        }
    }

    /**
     * What the model is fed: every row of the batches is the held-out documents packed whole in file order into rows of
     * L+1 (as many as fit, the rest PAD; packed here by hand), and each position holds the token, the next token as its
     * label, the 1-based document of its row (the EOD belongs to the document it ends, 0 at padding) and its position
     * in that document; PAD is never an input or a label (0 there).
     */
    @Test
    void batchesFeedTheDocumentsPackedWholeInFileOrder(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("heldout");
        RecallDatasets.write(prefix, TASK, 30, 4);
        int length = 128;
        List<int[]> expectedRows = new java.util.ArrayList<>();
        int[] row = null;
        int used = 0;
        for (int[] document : TASK.documents(4, 30)) {
            if (row == null || used + document.length > length + 1) {
                row = new int[length + 1];
                Arrays.fill(row, TASK.padId());
                expectedRows.add(row);
                used = 0;
            }
            System.arraycopy(document, 0, row, used, document.length);
            used += document.length;
        }
        List<MicroBatch> batches = new RecallEval(TASK, length, 3, 0).batches(prefix, 1000);
        int r = 0;
        for (MicroBatch batch : batches) {
            for (int b = 0; b < batch.rows(); b++, r++) {
                int[] raw = expectedRows.get(r);
                int document = 1;
                int position = 0;
                for (int i = 0; i < length; i++) {
                    int at = b * length + i;
                    boolean pad = raw[i] == TASK.padId();
                    String where = "row " + r + " position " + i;
                    assertEquals(pad ? 0 : raw[i], batch.tokens()[at], where + " token");
                    assertEquals(raw[i + 1] == TASK.padId() ? 0 : raw[i + 1], batch.labels()[at], where + " label");
                    assertEquals(pad ? 0 : document, batch.segmentIds()[at], where + " segment");
                    assertEquals(pad ? 0 : position, batch.positionIds()[at], where + " position");
                    position++;
                    if (raw[i] == TASK.eodId()) {
                        document++;
                        position = 0;
                    }
                }
            }
        }
        assertEquals(expectedRows.size(), r, "rows");
    }

    /**
     * The packing's edges on hand-made documents (task tokens: keys 0–63, values 64–127, EOD): rows of L+1 = 8 filled
     * exactly by two documents, a document of exactly 8 tokens, a document of one token (an EOD: scored in no
     * prediction, so left out of the packing check) and one of two. The check's per-token loss is twice the document's
     * number in its row (alone always 1), so the largest relative difference is known: (2·2 − 2)/2 = 1.
     */
    @Test
    void rowsFilledExactlyAndTheShortestDocumentsAtTheEdges(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("edges");
        int eod = TASK.eodId();
        List<int[]> documents = List.of(new int[] {1, 65, eod}, new int[] {2, 66, 3, 67, eod}, new int[] {eod},
                new int[] {4, eod}, new int[] {5, 69, 6, 70, 7, 71, eod}, new int[] {8, 72, 9, 73, 10, 74, 11, eod});
        try (var builder = new io.kdapack.data.indexed.IndexedDatasetBuilder(prefix,
                io.kdapack.data.indexed.TokenDType.forVocabulary(TASK.vocabularySize()))) {
            for (int[] document : documents) {
                builder.addDocument(document);
            }
            builder.finish();
        }
        RecallEval eval = new RecallEval(TASK, 7, 3, 0);
        List<MicroBatch> batches = eval.batches(prefix, 1000);
        // Rows: documents 0 + 1 (8 tokens exactly), 2 + 3, 4, 5 (8 tokens).
        assertEquals(4, batches.stream().mapToInt(MicroBatch::rows).sum(), "rows");
        assertEquals(List.of(2, 2, 1, 1), batches.stream().flatMap(b -> java.util.stream.IntStream.range(0, b.rows())
                .mapToObj(r -> Arrays.stream(b.segmentIds(), r * 7, (r + 1) * 7).max().orElse(0))).toList(),
                "documents per row");

        RecallEval.PackingCheck check = eval.packedVsAlone(prefix, 1000, batch -> {
            double[] loss = new double[batch.size()];
            for (int i = 0; i < loss.length; i++) {
                loss[i] = 2.0 * batch.segmentIds()[i];
            }
            return new LanguageModel.Output(loss, 0, 0, null, 0, 0);
        });
        assertEquals(5, check.documents(), "every document with a prediction, the single EOD left out");
        assertEquals(1.0, check.maxRelErr(), 1e-15);
    }

    @Test
    void rowsOfTheSmallestLengthHoldOnlyWhatFitsWhole(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("heldout");
        RecallDatasets.write(prefix, TASK, 30, 4);
        assertTrue(TASK.documents(4, 30).stream().allMatch(d -> d.length > 3), "every document is longer than 3");
        assertEquals(List.of(), new RecallEval(TASK, 2, 1, 0).batches(prefix, 1000), "L = 2: no document fits a row of 3");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RecallEval(TASK, 1, 1, 0));
        assertEquals("need seqLength >= 2 and rowsPerBatch >= 1, got 1 and 1", e.getMessage());
    }

    /**
     * The mechanism itself on a small hybrid model (KDA with grouped value heads and short convolutions, MLA, MTP) with
     * O(1) random weights, so that a leak is far above round-off: with isolation each held-out document's loss packed
     * equals its loss alone up to float32 summation order (tolerance 1e-5, the project's packing bar; ~1e-7 seen),
     * without it a document depends on those before it in its row (the difference is of order 1).
     */
    @Test
    void packedLossesEqualTheDocumentsAloneOnlyWithIsolation(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("heldout");
        RecallDatasets.write(prefix, TASK, 40, 4);
        RecallEval eval = new RecallEval(TASK, 32, 3, 1);

        RecallEval.PackingCheck isolated = eval.packedVsAlone(prefix, 1000, forward(true));
        assertEquals(40, isolated.documents(), "every document fits a row of 33");
        assertTrue(isolated.maxRelErr() <= 1e-5, "isolated: " + isolated.maxRelErr());

        RecallEval.PackingCheck leaky = eval.packedVsAlone(prefix, 1000, forward(false));
        assertEquals(40, leaky.documents());
        assertTrue(leaky.maxRelErr() > 1e-2, "without isolation: " + leaky.maxRelErr());

        RecallEval.PackingCheck firstRow = eval.packedVsAlone(prefix, 1, forward(false));
        assertTrue(firstRow.documents() >= 2 && firstRow.documents() < 40, "maxRows bounds the check: "
                + firstRow.documents());
    }

    /** A forward pass of the small model, weights from seed 3 made O(1). */
    private static Function<MicroBatch, LanguageModel.Output> forward(boolean isolation) {
        ModelConfig config = new ModelConfig(TASK.vocabularySize(), 16, 2, 2, 24, 1e-6, false,
                new KdaConfig(1, 2, 8, 4, null, 1e-5), new MlaConfig(2, 8, 8, 4, 4, 4, 10000.0), new MtpConfig(1, 0.1), null);
        HybridModel model = new HybridModel(config, new KdaChunked(1), isolation);
        model.initialize(3);
        Random random = new Random(3);
        for (Parameter p : model.parameters()) {
            float[] v = p.values();
            boolean gain = p.name().endsWith("norm.weight");
            boolean gate = p.name().endsWith("A_log") || p.name().endsWith("dt_bias");
            for (int i = 0; i < v.length && !gate; i++) {
                v[i] = gain ? 1 + 0.1f * (float) random.nextGaussian() : 0.35f * (float) random.nextGaussian();
            }
        }
        return batch -> model.run(batch, null);
    }

    private static int queryAt(int[] document) {
        for (int i = 0; i < document.length; i++) {
            if (document[i] == TASK.queryId()) {
                return i;
            }
        }
        throw new AssertionError("no QUERY in " + Arrays.toString(document));
    }

    @Test
    void maxRowsBoundsTheEvalAndLongDocumentsAreLeftOut(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("heldout");
        RecallDatasets.write(prefix, TASK, 30, 4);
        List<MicroBatch> two = new RecallEval(TASK, 128, 1, 0).batches(prefix, 2);
        assertEquals(2, two.size());
        // Rows of 33 hold a few documents each, so maxRows cuts the packing well before the documents run out.
        RecallEval narrow = new RecallEval(TASK, 32, 1, 0);
        assertTrue(narrow.batches(prefix, 1000).size() > 4, "more than 4 rows of 33");
        for (int maxRows : new int[] {1, 3}) {
            assertEquals(maxRows, narrow.batches(prefix, maxRows).size(), "maxRows " + maxRows);
        }
        // Rows of 11 hold only the documents of at most 11 tokens.
        List<MicroBatch> short10 = new RecallEval(TASK, 10, 4, 0).batches(prefix, 1000);
        long fitting = TASK.documents(4, 30).stream().filter(d -> d.length <= 11).count();
        assertTrue(fitting > 0 && fitting < 30, "some fit, some do not: " + fitting);
        long packed = short10.stream().mapToLong(MicroBatch::segmentCount).sum();
        assertEquals(fitting, packed);
    }

    private static Function<MicroBatch, LanguageModel.Output> constantLoss(double value) {
        return batch -> {
            double[] loss = new double[batch.size()];
            Arrays.fill(loss, value);
            return new LanguageModel.Output(loss, 0, 0, null, 0, 0);
        };
    }
}
