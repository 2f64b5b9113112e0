package io.kdapack.core.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class ExpKernelsTest {

    /** The polynomial's documented error is ~2 ulp of float (2^-23 ≈ 1.2e-7 each); 3e-7 relative allows for that. */
    private static final double EXP_TOLERANCE = 3e-7;

    @Test
    void expIsAccurateOverTheClampedRange() {
        Random random = new Random(11);
        float[] x = new float[100_003];
        for (int i = 0; i < x.length; i++) {
            x[i] = (random.nextFloat() - 0.5f) * 174f; // [−87, 87]
        }
        float[] y = new float[x.length];
        ExpKernels.exp(x, 0, y, 0, x.length);
        for (int i = 0; i < x.length; i++) {
            double expected = Math.exp(x[i]);
            double err = Math.abs(y[i] - expected) / expected;
            assertTrue(err <= EXP_TOLERANCE, "exp(" + x[i] + ") = " + y[i] + ", relative error " + err);
        }
    }

    @Test
    void vectorLanesAndScalarTailGiveBitwiseEqualResultsAtEveryOffset() {
        Random random = new Random(12);
        float[] z = new float[203];
        float[] dy = new float[z.length];
        for (int i = 0; i < z.length; i++) {
            z[i] = (random.nextFloat() - 0.5f) * 40f;
            dy[i] = random.nextFloat() - 0.5f;
        }
        z[0] = Float.NaN;
        z[1] = Float.POSITIVE_INFINITY;
        z[2] = Float.NEGATIVE_INFINITY;
        z[3] = -0f;
        for (int offset = 0; offset < 17; offset++) {
            int length = z.length - offset;
            float[] exp = new float[length];
            float[] silu = new float[length];
            float[] dSilu = new float[length];
            ExpKernels.exp(z, offset, exp, 0, length);
            ExpKernels.silu(z, offset, silu, 0, length);
            ExpKernels.siluBackward(z, offset, dy, offset, dSilu, 0, length);
            for (int i = 0; i < length; i++) {
                float v = z[offset + i];
                float s = ExpKernels.sigmoid(v);
                assertEquals(Float.floatToIntBits(ExpKernels.exp(v)), Float.floatToIntBits(exp[i]), "exp " + v);
                assertEquals(Float.floatToIntBits(v * s), Float.floatToIntBits(silu[i]), "silu " + v);
                assertEquals(Float.floatToIntBits(dy[offset + i] * (s * (1f + v * (1f - s)))),
                        Float.floatToIntBits(dSilu[i]), "silu backward " + v);
            }
        }
    }

    @Test
    void saturatesInsteadOfOverflowingAndKeepsNaN() {
        assertEquals(1f, ExpKernels.exp(0f));
        assertTrue(Float.isFinite(ExpKernels.exp(1000f)) && ExpKernels.exp(1000f) > 1e38f);
        assertTrue(ExpKernels.exp(-1000f) >= 0f && ExpKernels.exp(-1000f) < 1e-37f);
        assertTrue(Float.isNaN(ExpKernels.exp(Float.NaN)));
        assertEquals(1f, ExpKernels.sigmoid(200f));
        assertEquals(0.5f, ExpKernels.sigmoid(0f));
    }
}
