package io.kdapack.training;

import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.synthetic.AssociativeRecall;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The held-out eval of the demo task: whole held-out documents packed into rows of {@code L+1} tokens (in file order,
 * as many as fit, the rest of a row padded; a document longer than a row is left out), so that every row holds several documents side by side, and the model
 * scored on the answer positions only ({@link AssociativeRecall#answerPositions}: each value asked for after
 * {@code QUERY}). Those tokens are predictable from the current document alone, so their loss measures recall, and a
 * model whose state leaks across document boundaries recalls stale bindings of earlier documents.
 *
 * <p>Recall accuracy counts an answer as recalled when the model gives the right value a probability above ½
 * (cross-entropy below ln 2): then it is certainly the arg-max. The model interface reports losses, not logits, so
 * this is a lower bound of arg-max accuracy.
 */
public final class RecallEval {
    private static final double LN_2 = Math.log(2);

    /**
     * @param documents      held-out documents scored
     * @param answers        answer tokens scored
     * @param answerLoss     mean cross-entropy on the answers (nats)
     * @param recallAccuracy fraction of answers predicted with probability above ½
     */
    public record Result(int documents, long answers, double answerLoss, double recallAccuracy) {
    }

    private final AssociativeRecall task;
    private final int seqLength;
    private final int rowsPerBatch;
    private final int mtpDepth;

    /**
     * @param seqLength    L, positions per row
     * @param rowsPerBatch rows per forward pass
     * @param mtpDepth     the model's MTP depth (the batches carry its rolled arrays; only the main loss is scored)
     */
    public RecallEval(AssociativeRecall task, int seqLength, int rowsPerBatch, int mtpDepth) {
        if (seqLength < 2 || rowsPerBatch < 1) {
            throw new IllegalArgumentException("need seqLength >= 2 and rowsPerBatch >= 1, got " + seqLength + " and "
                    + rowsPerBatch);
        }
        this.task = task;
        this.seqLength = seqLength;
        this.rowsPerBatch = rowsPerBatch;
        this.mtpDepth = mtpDepth;
    }

    /** The micro-batches of the first {@code maxRows} packed rows of the held-out dataset at {@code prefix}. */
    public List<MicroBatch> batches(Path prefix, int maxRows) throws IOException {
        IndexedDataset dataset = IndexedDataset.open(prefix);
        List<int[]> rows = pack(dataset, maxRows);
        List<MicroBatch> out = new ArrayList<>();
        for (int from = 0; from < rows.size(); from += rowsPerBatch) {
            out.add(batch(rows.subList(from, Math.min(rows.size(), from + rowsPerBatch))));
        }
        return out;
    }

    /** Scores {@code batches} (from {@link #batches}) with {@code forward} (a forward pass without gradients). */
    public Result score(List<MicroBatch> batches, java.util.function.Function<MicroBatch, LanguageModel.Output> forward) {
        double sum = 0;
        long answers = 0;
        long recalled = 0;
        int documents = 0;
        for (MicroBatch batch : batches) {
            double[] loss = forward.apply(batch).perTokenLoss();
            for (int i = 0; i < loss.length; i++) {
                if (batch.lossMask()[i] != 0f) {
                    sum += loss[i];
                    answers++;
                    recalled += loss[i] < LN_2 ? 1 : 0;
                }
            }
            documents += batch.segmentCount();
        }
        return new Result(documents, answers, answers == 0 ? 0 : sum / answers,
                answers == 0 ? 0 : (double) recalled / answers);
    }

    /** Rows of {@code L+1} raw tokens: whole documents in file order, each row padded with PAD. */
    private List<int[]> pack(IndexedDataset dataset, int maxRows) {
        List<int[]> rows = new ArrayList<>();
        int[] row = newRow();
        int used = 0;
        for (int d = 0; d < dataset.sequenceCount() && rows.size() < maxRows; d++) {
            int[] document = dataset.sequence(d);
            if (document.length > row.length) {
                continue; // longer than a row: it cannot be scored whole
            }
            if (used + document.length > row.length) {
                rows.add(row);
                row = newRow();
                used = 0;
            }
            System.arraycopy(document, 0, row, used, document.length);
            used += document.length;
        }
        if (used > 0 && rows.size() < maxRows) {
            rows.add(row);
        }
        return rows;
    }

    private int[] newRow() {
        int[] row = new int[seqLength + 1];
        Arrays.fill(row, task.padId());
        return row;
    }

    /**
     * A micro-batch of packed rows: inputs {@code raw[0..L)}, labels {@code raw[1..L]}, segment ids per document (the
     * EOD belongs to the document it ends; padding 0), positions restarting per document, loss mask on the positions
     * whose label is an answer.
     */
    private MicroBatch batch(List<int[]> rows) {
        int b = rows.size();
        int size = b * seqLength;
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] mask = new float[size];
        int[] positions = new int[size];
        int[] segments = new int[size];
        for (int r = 0; r < b; r++) {
            int[] raw = rows.get(r);
            boolean[] answer = task.answerPositions(raw);
            int segment = 1;
            int position = 0;
            for (int i = 0; i < seqLength; i++) {
                int at = r * seqLength + i;
                boolean pad = raw[i] == task.padId();
                tokens[at] = pad ? 0 : raw[i];
                labels[at] = raw[i + 1] == task.padId() ? 0 : raw[i + 1];
                mask[at] = answer[i + 1] ? 1f : 0f;
                segments[at] = pad ? 0 : segment;
                positions[at] = pad ? 0 : position;
                position++;
                if (raw[i] == task.eodId()) {
                    segment++;
                    position = 0;
                }
            }
        }
        return MicroBatchAssembler.of(b, seqLength, tokens, labels, mask, positions, segments, mtpDepth);
    }
}
