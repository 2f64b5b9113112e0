package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class RopeTest {

    /**
     * R = 4, θ = 100: inverse frequencies 100^0 = 1 and 100^(−2/4) = 0.1; at position 2 the pairs (x0,x1) and (x2,x3)
     * turn by 2 and 0.2 radians. Expected values worked out by hand from the rotation formula (cos 2 = −0.41615,
     * sin 2 = 0.90930, cos 0.2 = 0.98007, sin 0.2 = 0.19867).
     */
    @Test
    void rotatesInterleavedPairs() {
        Rope rope = new Rope(4, 100);
        float[] x = {9, 1, 2, 3, 4};
        rope.rotate(x, 1, 2);
        assertArrayEquals(new float[] {9, -2.2347417f, 0.07700375f, 2.1455224f, 4.5162743f}, x, 2e-6f);
        rope.rotateBack(x, 1, 2);
        assertArrayEquals(new float[] {9, 1, 2, 3, 4}, x, 2e-6f);
    }

    @Test
    void positionZeroIsIdentity() {
        Rope rope = new Rope(6, 10000);
        float[] x = {1, -2, 3, 0.5f, 7, 8};
        rope.rotate(x, 0, 0);
        assertArrayEquals(new float[] {1, -2, 3, 0.5f, 7, 8}, x);
    }

    @Test
    void rejectsOddDimension() {
        assertEquals("rope dim must be even and >= 2, got 3",
                assertThrows(IllegalArgumentException.class, () -> new Rope(3, 10000)).getMessage());
    }
}
