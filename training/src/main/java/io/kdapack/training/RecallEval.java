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
import java.util.function.Function;

/**
 * The held-out eval of the demo task: whole held-out documents packed into rows of {@code L+1} tokens (in file order,
 * as many as fit, the rest of a row padded; a document longer than a row is left out), so that every row holds several documents side by side, and the model
 * scored on the answer positions only ({@link AssociativeRecall#answerPositions}: each value asked for after
 * {@code QUERY}). Those tokens are predictable from the current document alone, so their loss measures recall, and a
 * model whose state leaks across document boundaries recalls stale bindings of earlier documents.
 *
 * <p>Recall accuracy counts an answer as recalled when the model gives the right value a probability above ½
 * (cross-entropy below ln 2): then it is certainly the arg-max. The model interface reports losses, not logits, so
 * this is a lower bound of arg-max accuracy. {@link #queries} gives each answer's verdict, the one {@link #score}
 * counts; every answer is one token (a value or {@code NONE}).
 *
 * <p>{@link #packedVsAlone} shows the mechanism directly, whatever the training reached: it scores every held-out
 * document of those rows packed and alone in a row of its own, and compares the two per-document losses. With
 * isolation they agree to rounding; without it a document's loss depends on the documents before it in its row.
 */
public final class RecallEval {
    private static final double LN_2 = Math.log(2);
    /** Documents per forward pass when each is scored alone (rows as long as the longest of them). */
    private static final int ALONE_ROWS_PER_BATCH = 64;

    /**
     * @param documents      held-out documents scored
     * @param answers        answer tokens scored
     * @param answerLoss     mean cross-entropy on the answers (nats)
     * @param recallAccuracy fraction of answers predicted with probability above ½
     * @param noneAnswers    answers that are {@code NONE} (queries for a key the document did not bind)
     * @param boundRecall    recall accuracy on the answers that are values (keys the document bound)
     * @param noneRecall     recall accuracy on the {@code NONE} answers, the ones leakage breaks
     */
    public record Result(int documents, long answers, double answerLoss, double recallAccuracy, long noneAnswers,
                         double boundRecall, double noneRecall) {
    }

    /**
     * One held-out query as the eval scores it.
     *
     * @param batch    index of its micro-batch in the list scored
     * @param position its flat index {@code row·L + i} in that micro-batch: the input there is the queried key, the
     *                 label the answer
     * @param prompt   its document from the first token up to and including the queried key: what the prediction of
     *                 the answer may see (with isolation; packed, the row's earlier documents come before it)
     * @param answer   the expected answer: a value, or {@code NONE}
     * @param loss     the cross-entropy of the answer there (nats)
     */
    public record Query(int batch, int position, int[] prompt, int answer, double loss) {
        /** The eval's verdict: the answer had a probability above ½. */
        public boolean recalled() {
            return loss < LN_2;
        }
    }

    /**
     * @param documents  documents scored both ways
     * @param maxRelErr  the largest {@code |packed − alone| / alone} of a document's loss
     */
    public record PackingCheck(int documents, double maxRelErr) {
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
        return batches(pack(IndexedDataset.open(prefix), maxRows), seqLength, rowsPerBatch, this::answerMask);
    }

    /**
     * The loss of each held-out document of the first {@code maxRows} packed rows (the mean cross-entropy of its
     * next-token predictions, from its first token to the one before its EOD), once packed as in {@link #batches} and
     * once alone in a row, compared.
     *
     * @param forward a forward pass without gradients
     */
    public PackingCheck packedVsAlone(Path prefix, int maxRows, Function<MicroBatch, LanguageModel.Output> forward)
            throws IOException {
        List<int[]> rows = pack(IndexedDataset.open(prefix), maxRows);
        List<int[]> documents = new ArrayList<>();
        for (int[] row : rows) {
            documents.addAll(documentsOf(row).stream().filter(d -> d.length >= 2).toList()); // ≥ 1 prediction
        }
        double[] packed = documentLosses(batches(rows, seqLength, rowsPerBatch, this::documentMask), forward);
        int longest = documents.stream().mapToInt(d -> d.length).max().orElse(2);
        List<int[]> alone = documents.stream().map(d -> padded(d, longest)).toList();
        double[] single = documentLosses(batches(alone, longest - 1, ALONE_ROWS_PER_BATCH, this::documentMask), forward);
        if (packed.length != documents.size() || single.length != documents.size()) {
            throw new IllegalStateException("documents scored: " + packed.length + " packed, " + single.length
                    + " alone, expected " + documents.size());
        }
        double worst = 0;
        for (int d = 0; d < packed.length; d++) {
            worst = Math.max(worst, Math.abs(packed[d] - single[d]) / Math.abs(single[d]));
        }
        return new PackingCheck(documents.size(), worst);
    }

    /** Scores {@code batches} (from {@link #batches}) with {@code forward} (a forward pass without gradients). */
    public Result score(List<MicroBatch> batches, Function<MicroBatch, LanguageModel.Output> forward) {
        double sum = 0;
        long recalled = 0;
        long noneAnswers = 0;
        long noneRecalled = 0;
        List<Query> queries = queries(batches, forward);
        for (Query q : queries) {
            int hit = q.recalled() ? 1 : 0;
            sum += q.loss();
            recalled += hit;
            if (q.answer() == task.noneId()) {
                noneAnswers++;
                noneRecalled += hit;
            }
        }
        long answers = queries.size();
        int documents = batches.stream().mapToInt(MicroBatch::segmentCount).sum();
        return new Result(documents, answers, answers == 0 ? 0 : sum / answers, fraction(recalled, answers),
                noneAnswers, fraction(recalled - noneRecalled, answers - noneAnswers), fraction(noneRecalled, noneAnswers));
    }

    /**
     * Every answer of {@code batches} (from {@link #batches}) with its loss under {@code forward} (a forward pass
     * without gradients) and its verdict: in batch order, then position order, the answers {@link #score} counts.
     */
    public List<Query> queries(List<MicroBatch> batches, Function<MicroBatch, LanguageModel.Output> forward) {
        List<Query> queries = new ArrayList<>();
        for (int b = 0; b < batches.size(); b++) {
            MicroBatch batch = batches.get(b);
            double[] loss = forward.apply(batch).perTokenLoss();
            for (int i = 0; i < loss.length; i++) {
                if (batch.lossMask()[i] != 0f) {
                    int documentStart = i - batch.positionIds()[i];
                    queries.add(new Query(b, i, Arrays.copyOfRange(batch.tokens(), documentStart, i + 1),
                            batch.labels()[i], loss[i]));
                }
            }
        }
        return queries;
    }

    private static double fraction(long part, long whole) {
        return whole == 0 ? 0 : (double) part / whole;
    }

    /**
     * Mean loss per document, in row order then document order, from batches whose mask covers whole documents
     * ({@link #documentMask}): a document's positions are those of one segment id in one row.
     */
    private static double[] documentLosses(List<MicroBatch> batches, Function<MicroBatch, LanguageModel.Output> forward) {
        List<Double> losses = new ArrayList<>();
        for (MicroBatch batch : batches) {
            double[] loss = forward.apply(batch).perTokenLoss();
            int length = batch.length();
            for (int r = 0; r < batch.rows(); r++) {
                double sum = 0;
                int count = 0;
                int segment = 0;
                for (int i = r * length; i < (r + 1) * length; i++) {
                    if (batch.lossMask()[i] == 0f) {
                        continue;
                    }
                    if (batch.segmentIds()[i] != segment && count > 0) {
                        losses.add(sum / count);
                        sum = 0;
                        count = 0;
                    }
                    segment = batch.segmentIds()[i];
                    sum += loss[i];
                    count++;
                }
                if (count > 0) {
                    losses.add(sum / count);
                }
            }
        }
        return losses.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /** Rows of {@code L+1} raw tokens: whole documents in file order, each row padded with PAD. */
    private List<int[]> pack(IndexedDataset dataset, int maxRows) {
        List<int[]> rows = new ArrayList<>();
        int[] row = newRow(seqLength + 1);
        int used = 0;
        for (int d = 0; d < dataset.sequenceCount() && rows.size() < maxRows; d++) {
            int[] document = dataset.sequence(d);
            if (document.length > row.length) {
                continue; // longer than a row: it cannot be scored whole
            }
            if (used + document.length > row.length) {
                rows.add(row);
                row = newRow(seqLength + 1);
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

    /** The documents of a packed row: each ends after an EOD (or where the padding starts). */
    private List<int[]> documentsOf(int[] row) {
        List<int[]> documents = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < row.length && row[i] != task.padId(); i++) {
            if (row[i] == task.eodId() || i + 1 == row.length || row[i + 1] == task.padId()) {
                documents.add(Arrays.copyOfRange(row, start, i + 1));
                start = i + 1;
            }
        }
        return documents;
    }

    private int[] padded(int[] document, int length) {
        int[] row = newRow(length);
        System.arraycopy(document, 0, row, 0, document.length);
        return row;
    }

    private int[] newRow(int length) {
        int[] row = new int[length];
        Arrays.fill(row, task.padId());
        return row;
    }

    /** Loss on the answers: position {@code i} of {@code raw} when the label {@code raw[i+1]} is an answer. */
    private boolean[] answerMask(int[] raw) {
        return Arrays.copyOfRange(task.answerPositions(raw), 1, raw.length);
    }

    /** Loss on every next-token prediction inside a document: not from its EOD, not to or from padding. */
    private boolean[] documentMask(int[] raw) {
        boolean[] mask = new boolean[raw.length - 1];
        for (int i = 0; i < mask.length; i++) {
            mask[i] = raw[i] != task.eodId() && raw[i] != task.padId() && raw[i + 1] != task.padId();
        }
        return mask;
    }

    private List<MicroBatch> batches(List<int[]> rows, int length, int perBatch, Function<int[], boolean[]> lossOn) {
        List<MicroBatch> out = new ArrayList<>();
        for (int from = 0; from < rows.size(); from += perBatch) {
            out.add(batch(rows.subList(from, Math.min(rows.size(), from + perBatch)), length, lossOn));
        }
        return out;
    }

    /**
     * A micro-batch of rows of {@code length + 1} raw tokens: inputs {@code raw[0..L)}, labels {@code raw[1..L]},
     * segment ids per document (the EOD belongs to the document it ends; padding 0), positions restarting per
     * document, loss mask {@code lossOn(raw)}.
     */
    private MicroBatch batch(List<int[]> rows, int length, Function<int[], boolean[]> lossOn) {
        int b = rows.size();
        int size = b * length;
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] mask = new float[size];
        int[] positions = new int[size];
        int[] segments = new int[size];
        for (int r = 0; r < b; r++) {
            int[] raw = rows.get(r);
            boolean[] loss = lossOn.apply(raw);
            int segment = 1;
            int position = 0;
            for (int i = 0; i < length; i++) {
                int at = r * length + i;
                boolean pad = raw[i] == task.padId();
                tokens[at] = pad ? 0 : raw[i];
                labels[at] = raw[i + 1] == task.padId() ? 0 : raw[i + 1];
                mask[at] = loss[i] ? 1f : 0f;
                segments[at] = pad ? 0 : segment;
                positions[at] = pad ? 0 : position;
                position++;
                if (raw[i] == task.eodId()) {
                    segment++;
                    position = 0;
                }
            }
        }
        return MicroBatchAssembler.of(b, length, tokens, labels, mask, positions, segments, mtpDepth);
    }
}
