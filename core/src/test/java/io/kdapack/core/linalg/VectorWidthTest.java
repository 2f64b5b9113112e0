package io.kdapack.core.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorWidth#dot} sums in the documented order, which no lane count enters: compared bit for bit with that
 * order written as plain scalar code. (That the order also survives other widths is {@code VectorWidthForkTest}'s
 * job: one JVM has one width.)
 */
class VectorWidthTest {

    /** The documented order: 16 fused multiply-add chains over the whole blocks, the fixed tree, then the tail. */
    private static float referenceDot(int n, float[] x, int xOff, float[] y, int yOff) {
        float[] partials = new float[16];
        int whole = n - n % 16;
        for (int i = 0; i < whole; i++) {
            partials[i % 16] = Math.fma(x[xOff + i], y[yOff + i], partials[i % 16]);
        }
        for (int half = 8; half >= 1; half /= 2) {
            for (int j = 0; j < half; j++) {
                partials[j] += partials[j + half];
            }
        }
        float tail = 0f;
        for (int i = whole; i < n; i++) {
            tail = Math.fma(x[xOff + i], y[yOff + i], tail);
        }
        return partials[0] + tail;
    }

    @Test
    void speciesHoldsFourToSixteenFloats() {
        assertTrue(VectorWidth.LANES == 4 || VectorWidth.LANES == 8 || VectorWidth.LANES == 16,
                "lanes " + VectorWidth.LANES);
    }

    @Test
    void dotSumsInTheDocumentedOrderAtEveryLengthAndOffset() {
        Random random = new Random(21);
        float[] x = new float[1100];
        float[] y = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
            y[i] = (float) random.nextGaussian();
        }
        int[] lengths = new int[80];
        for (int i = 0; i < 72; i++) {
            lengths[i] = i;
        }
        System.arraycopy(new int[] {127, 128, 129, 207, 255, 256, 1000, 1093}, 0, lengths, 72, 8);
        for (int n : lengths) {
            for (int offset = 0; offset < 5; offset++) {
                float expected = referenceDot(n, x, offset, y, 3);
                float actual = VectorWidth.dot(n, x, offset, y, 3);
                assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(actual),
                        "n=" + n + " offset=" + offset + ": " + actual + " vs " + expected);
            }
        }
    }

    /**
     * Against the double sum: each of the 16 chains adds at most n/16 rounding errors, the tree 4 and the tail at
     * most 16, each at most one unit roundoff (2⁻²⁴) of the sum of |xᵢyᵢ|; the bound below is that count plus 2.
     */
    @Test
    void dotIsWithinItsRoundingBound() {
        Random random = new Random(22);
        for (int n : new int[] {1, 7, 16, 207, 4096}) {
            float[] x = new float[n];
            float[] y = new float[n];
            double exact = 0;
            double magnitude = 0;
            for (int i = 0; i < n; i++) {
                x[i] = (float) random.nextGaussian();
                y[i] = (float) random.nextGaussian();
                exact += (double) x[i] * y[i];
                magnitude += Math.abs((double) x[i] * y[i]);
            }
            double bound = (n / 16 + 4 + 16 + 2) * 0x1p-24 * magnitude;
            double error = Math.abs(VectorWidth.dot(n, x, 0, y, 0) - exact);
            assertTrue(error <= bound, "n=" + n + ": error " + error + " > " + bound);
        }
    }
}
