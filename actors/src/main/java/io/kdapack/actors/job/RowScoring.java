package io.kdapack.actors.job;

import io.kdapack.core.loss.LossReport;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.pipeline.BatchLoss;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * An evaluation scored a few rows at a time, so that the model stage can put training steps between its pieces: rows
 * of a packed batch are independent (no segment crosses a row), so the loss of the batch is the sum of its rows'
 * losses and its segments are theirs in row order. Each piece runs with the weights current when it runs; the result
 * names the steps of the first and the last piece's weights. Confined to the model stage.
 */
final class RowScoring {

    /** The request; {@link Model.Evaluate#batch()} is {@code [B, T]}. */
    final Model.Evaluate request;
    private int nextRow;
    private LossReport total = LossReport.EMPTY;
    private final List<LossReport> segments = new ArrayList<>();
    private long firstStep = -1;
    private long lastStep = -1;

    RowScoring(Model.Evaluate request) {
        this.request = request;
    }

    boolean done() {
        return nextRow == request.batch().rows();
    }

    /** Rows {@code nextRow …} of at most {@code tokens} tokens (at least one row), to score next. */
    MicroBatch nextPiece(int tokens) {
        MicroBatch batch = request.batch();
        int rows = Math.max(1, Math.min(batch.rows() - nextRow, tokens / batch.length()));
        int from = nextRow * batch.length();
        int to = from + rows * batch.length();
        return new MicroBatch(rows, batch.length(), Arrays.copyOfRange(batch.tokens(), from, to),
                Arrays.copyOfRange(batch.labels(), from, to), Arrays.copyOfRange(batch.lossMask(), from, to),
                Arrays.copyOfRange(batch.positionIds(), from, to), Arrays.copyOfRange(batch.segmentIds(), from, to),
                batch.mtpLabels() == null ? null : Arrays.copyOfRange(batch.mtpLabels(), from, to),
                batch.mtpLossMask() == null ? null : Arrays.copyOfRange(batch.mtpLossMask(), from, to));
    }

    /** Adds the loss of the piece last returned by {@link #nextPiece}, scored with the weights of {@code step}. */
    void add(MicroBatch piece, BatchLoss loss, long step) {
        nextRow += piece.rows();
        total = total.plus(loss.total());
        segments.addAll(loss.segments());
        if (firstStep < 0) {
            firstStep = step;
        }
        lastStep = step;
    }

    BatchLoss result() {
        return new BatchLoss(total, segments, firstStep, lastStep);
    }
}
