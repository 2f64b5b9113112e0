package io.kdapack.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.synthetic.AssociativeRecall;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
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

        // Each document of n bindings has 4n+2 tokens and n answers; all 30 fit rows of 129.
        long answers = documents.stream().mapToLong(d -> (d.length - 2) / 4).sum();
        long maskedLabels = 0;
        for (MicroBatch b : batches) {
            for (int i = 0; i < b.size(); i++) {
                if (b.lossMask()[i] != 0f) {
                    maskedLabels++;
                    int label = b.labels()[i];
                    assertTrue(label >= 64 && label < 128, "an answer is a value token, got " + label);
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

        RecallEval.Result sure = eval.score(batches, constantLoss(0.1));
        assertEquals(30, sure.documents());
        assertEquals(answers, sure.answers());
        assertEquals(0.1, sure.answerLoss(), 1e-12);
        assertEquals(1.0, sure.recallAccuracy());
        RecallEval.Result unsure = eval.score(batches, constantLoss(Math.log(2) + 1e-9));
        assertEquals(0.0, unsure.recallAccuracy(), "probability ½ or less is not recall");
    }

    @Test
    void maxRowsBoundsTheEvalAndLongDocumentsAreLeftOut(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("heldout");
        RecallDatasets.write(prefix, TASK, 30, 4);
        List<MicroBatch> two = new RecallEval(TASK, 128, 1, 0).batches(prefix, 2);
        assertEquals(2, two.size());
        // Rows of 17 hold only documents of at most 4 bindings (18 tokens do not fit).
        List<MicroBatch> short16 = new RecallEval(TASK, 16, 4, 0).batches(prefix, 1000);
        long fitting = TASK.documents(4, 30).stream().filter(d -> d.length <= 17).count();
        long packed = short16.stream().mapToLong(MicroBatch::segmentCount).sum();
        assertEquals(fitting, packed);
    }

    private static java.util.function.Function<MicroBatch, LanguageModel.Output> constantLoss(double value) {
        return batch -> {
            double[] loss = new double[batch.size()];
            Arrays.fill(loss, value);
            return new LanguageModel.Output(loss, 0, 0, null, 0, 0);
        };
    }
}
