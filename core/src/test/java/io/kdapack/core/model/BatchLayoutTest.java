package io.kdapack.core.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/**
 * Where a micro-batch's documents are for the layers (what the removed data-side segmenter's tests checked): a
 * document never continues into the next row even with the same id, a document starting at a row start belongs to
 * that row, padding is in no sequence, a row of padding only holds none; without isolation each whole row is one
 * sequence, padding included.
 */
class BatchLayoutTest {
    private static final int B = 3;
    private static final int L = 4;
    private static final int[] SEGMENT_IDS = {
        1, 1, 1, 1,   // one document filling the row
        1, 1, 2, 0,   // the same id again: a new document at the row start; then one of length 1; then padding
        0, 0, 0, 0,   // padding only
    };

    private static MicroBatch batch() {
        int[] positions = {0, 1, 2, 3, 0, 1, 0, 0, 0, 0, 0, 0};
        return new MicroBatch(B, L, new int[B * L], new int[B * L], new float[B * L], positions, SEGMENT_IDS,
                null, null);
    }

    @Test
    void withIsolationEveryLayerRunsOverTheDocuments() {
        MicroBatch batch = batch();
        BatchLayout layout = BatchLayout.of(batch, true);
        assertArrayEquals(new int[] {0, 4, 6}, layout.documents().starts());
        assertArrayEquals(new int[] {4, 6, 7}, layout.documents().ends());
        assertEquals(B * L, layout.tokens());
        assertSame(layout.documents(), layout.recurrence(), "KDA and convolutions reset where attention does");
        assertSame(batch.positionIds(), layout.positions());
    }

    @Test
    void withoutIsolationEachRowIsOneSequencePaddingIncluded() {
        BatchLayout layout = BatchLayout.of(batch(), false);
        assertArrayEquals(new int[] {0, 4, 8}, layout.documents().starts());
        assertArrayEquals(new int[] {4, 8, 12}, layout.documents().ends());
        assertArrayEquals(layout.documents().starts(), layout.recurrence().starts());
        assertArrayEquals(layout.documents().ends(), layout.recurrence().ends());
    }
}
