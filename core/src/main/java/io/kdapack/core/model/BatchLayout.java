package io.kdapack.core.model;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;

/**
 * Where the documents of a micro-batch are, as the layers need it, over the flattened token axis {@code T = B·L}.
 *
 * @param documents  the sequences of full attention's block-diagonal causal mask: the documents of the segment ids
 *                   when boundaries are isolated, else each whole row (plain causal attention across documents)
 * @param recurrence the sequences the KDA recurrence and the short convolutions run over: the documents when
 *                   boundaries are isolated, else each whole row (state then flows from one document into the next)
 * @param positions  {@code [T]} RoPE positions
 */
public record BatchLayout(Segments documents, Segments recurrence, int[] positions) {

    /**
     * The layout of {@code batch}. {@code isolation = false} makes each row one sequence for every layer — what a
     * model packed without document isolation sees: KDA state, short convolutions and attention all cross
     * document boundaries.
     */
    public static BatchLayout of(MicroBatch batch, boolean isolation) {
        Segments sequences = isolation
                ? Varlen.fromSegmentIds(batch.segmentIds(), batch.rows(), batch.length())
                : rows(batch.rows(), batch.length());
        return new BatchLayout(sequences, sequences, batch.positionIds());
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
