package io.kdapack.core.model;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;

/**
 * Where the documents of a micro-batch are, as the layers need it, over the flattened token axis {@code T = B·L}.
 *
 * @param documents  the documents of the segment ids: the block-diagonal causal mask of full attention
 * @param recurrence the sequences the KDA recurrence and the short convolutions run over: the documents when
 *                   boundaries are isolated, else each whole row (state then flows from one document into the next)
 * @param positions  {@code [T]} RoPE positions
 */
public record BatchLayout(Segments documents, Segments recurrence, int[] positions) {

    /** The layout of {@code batch}; {@code isolation = false} makes each row one recurrent sequence. */
    public static BatchLayout of(MicroBatch batch, boolean isolation) {
        Segments documents = Varlen.fromSegmentIds(batch.segmentIds(), batch.rows(), batch.length());
        return new BatchLayout(documents, isolation ? documents : rows(batch.rows(), batch.length()),
                batch.positionIds());
    }

    /** One sequence per row. */
    private static Segments rows(int rows, int length) {
        int[] starts = new int[rows];
        int[] ends = new int[rows];
        for (int b = 0; b < rows; b++) {
            starts[b] = b * length;
            ends[b] = (b + 1) * length;
        }
        return new Segments(rows * length, starts, ends);
    }

    public int tokens() {
        return documents.tokens();
    }
}
