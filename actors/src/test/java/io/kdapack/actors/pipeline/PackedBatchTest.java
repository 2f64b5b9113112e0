package io.kdapack.actors.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PackedBatchTest {

    private static PackedBatch batch(int rows, int length, int[] segmentIds) {
        int n = rows * length;
        return new PackedBatch(rows, length, new int[n], new int[n], new float[n], new int[n], segmentIds);
    }

    @Test
    void countsSegmentsAsRunsOfNonZeroIdsPerRow() {
        // Row 0: docs 1 | 2 | padding; row 1: doc 5, doc 3, doc 5 again (ids need not increase) — 5 segments.
        assertEquals(5, batch(2, 5, new int[] {1, 1, 2, 0, 0, 5, 5, 3, 5, 5}).segmentCount());
        // A row boundary starts a new segment even with the same id.
        assertEquals(2, batch(2, 2, new int[] {7, 7, 7, 7}).segmentCount());
        assertEquals(0, batch(1, 3, new int[] {0, 0, 0}).segmentCount());
        assertEquals(4, batch(2, 2, new int[] {1, 1, 1, 1}).positions());
    }

    @Test
    void badArraysNameTheirField() {
        var shortLabels = assertThrows(InvalidBatchException.class,
                () -> new PackedBatch(1, 3, new int[3], new int[2], new float[3], new int[3], new int[3]));
        assertEquals("labels", shortLabels.field());
        assertTrue(shortLabels.getMessage().contains("has 2 entries, expected batch_size·seq_length = 3"));

        var negative = assertThrows(InvalidBatchException.class,
                () -> new PackedBatch(1, 2, new int[] {0, -4}, new int[2], new float[2], new int[2], new int[2]));
        assertEquals("tokens", negative.field());
        assertTrue(negative.getMessage().contains("entry 1 must be >= 0, got -4"));

        var nanMask = assertThrows(InvalidBatchException.class,
                () -> new PackedBatch(1, 1, new int[1], new int[1], new float[] {Float.NaN}, new int[1], new int[1]));
        assertEquals("loss_mask", nanMask.field());

        var missing = assertThrows(InvalidBatchException.class,
                () -> new PackedBatch(1, 1, new int[1], new int[1], new float[1], null, new int[1]));
        assertEquals("position_ids", missing.field());
    }

    @Test
    void lossSumMeanIsZeroForAnEmptyMaskNeverNaN() {
        assertEquals(0.0, LossSum.ZERO.mean());
        assertEquals(2.5, new LossSum(5, 1).plus(new LossSum(0, 1)).mean());
        assertThrows(IllegalArgumentException.class, () -> new LossSum(Double.NaN, 1));
    }
}
