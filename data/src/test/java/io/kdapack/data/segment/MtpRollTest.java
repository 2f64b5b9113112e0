package io.kdapack.data.segment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
}
