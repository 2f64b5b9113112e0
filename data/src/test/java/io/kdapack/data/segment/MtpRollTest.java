package io.kdapack.data.segment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The MTP roll on a hand-written micro-batch: three rows (documents cut by padding, a leading EOD, padding only). */
class MtpRollTest {
    private static final int E = 9; // EOD
    private static final int B = 3;
    private static final int L = 8;
    private static final int[] SEGMENT_IDS = {
        1, 1, 1, 2, 2, 3, 0, 0,
        1, 2, 2, 2, 2, 2, 2, 2,
        0, 0, 0, 0, 0, 0, 0, 0,
    };

    @Test
    void mtpRollShiftsInsideSegmentsAndMasksEachSegmentEnd() {
        int[] labels = {
            6, E, 7, E, 8, 0, 0, 0,
            1, 2, 3, 4, 5, 6, E, 4,
            0, 0, 0, 0, 0, 0, 0, 0,
        };
        float[] mask = {
            1, 1, 1, 1, 0, 0, 0, 0,
            0, 1, 1, 1, 1, 1, 1, 1,
            0, 0, 0, 0, 0, 0, 0, 0,
        };
        int[] rolledLabels = new int[B * L];
        float[] rolledMask = new float[B * L];
        MtpRoll.roll(labels, mask, SEGMENT_IDS, B, L, rolledLabels, rolledMask);
        assertArrayEquals(new int[] {
            E, 7, 0, 8, 0, 0, 0, 0,
            0, 3, 4, 5, 6, E, 4, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
        }, rolledLabels);
        assertArrayEquals(new float[] {
            1, 1, 0, 0, 0, 0, 0, 0,
            0, 1, 1, 1, 1, 1, 1, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
        }, rolledMask);
        // Depth 2: roll the rolled arrays again.
        int[] labels2 = new int[B * L];
        float[] mask2 = new float[B * L];
        MtpRoll.roll(rolledLabels, rolledMask, SEGMENT_IDS, B, L, labels2, mask2);
        assertArrayEquals(new int[] {7, 0, 0, 0, 0, 0, 0, 0}, Arrays.copyOf(labels2, 8));
        assertArrayEquals(new float[] {1, 0, 0, 0, 0, 0, 0, 0}, Arrays.copyOf(mask2, 8));
        assertThrows(IllegalArgumentException.class,
                () -> MtpRoll.roll(labels, mask, SEGMENT_IDS, B, L, labels, rolledMask));
    }

    /**
     * Row boundaries: the roll never takes a label from the next row, even when that row goes on with the same
     * segment id (ids are per row, so equal ids in two rows are two documents); empty shapes roll nothing; a shape
     * that does not match the arrays is refused, naming it.
     */
    @Test
    void theRollStopsAtEachRowEndEvenWhenTheNextRowHasTheSameId() {
        int[] sameId = {4, 4, 4, 4};
        int[] rolledLabels = new int[4];
        float[] rolledMask = new float[4];
        MtpRoll.roll(new int[] {1, 2, 3, 5}, new float[] {1, 1, 1, 1}, sameId, 2, 2, rolledLabels, rolledMask);
        assertArrayEquals(new int[] {2, 0, 5, 0}, rolledLabels, "each row's last position has no next label");
        assertArrayEquals(new float[] {1, 0, 1, 0}, rolledMask);

        MtpRoll.roll(new int[0], new float[0], new int[0], 0, 4, new int[0], new float[0]); // B = 0
        MtpRoll.roll(new int[0], new float[0], new int[0], 3, 0, new int[0], new float[0]); // L = 0
        for (int wrong = 0; wrong < 5; wrong++) { // each array alone one value short of [2, 3]
            int[] labels = new int[wrong == 0 ? 5 : 6];
            float[] mask = new float[wrong == 1 ? 5 : 6];
            int[] ids = new int[wrong == 2 ? 5 : 6];
            int[] outLabels = new int[wrong == 3 ? 5 : 6];
            float[] outMask = new float[wrong == 4 ? 5 : 6];
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> MtpRoll.roll(labels, mask, ids, 2, 3, outLabels, outMask), "array " + wrong);
            assertEquals("array of 5 values is not [B,L] = [2,3]", e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MtpRoll.roll(new int[0], new float[0], new int[0], -1, 0, new int[0], new float[0]));
        assertEquals("array of 0 values is not [B,L] = [-1,0]", e.getMessage());
    }
}
