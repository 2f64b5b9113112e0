package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Relative-error comparisons {@code ‖actual − expected‖ / ‖expected‖} over whole tensors. */
public final class KdaAssertions {

    private KdaAssertions() {
    }

    public static double relativeError(float[] actual, double[] expected) {
        if (actual.length != expected.length) {
            throw new AssertionError("length " + actual.length + " != expected " + expected.length);
        }
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < actual.length; i++) {
            double d = actual[i] - expected[i];
            diff += d * d;
            ref += expected[i] * expected[i];
        }
        // An all-zero reference (e.g. dh0 of zero-length inputs) is compared absolutely.
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }

    public static double relativeError(float[] actual, float[] expected) {
        double[] e = new double[expected.length];
        for (int i = 0; i < e.length; i++) {
            e[i] = expected[i];
        }
        return relativeError(actual, e);
    }

    static void assertClose(String what, float[] actual, double[] expected, double tolerance) {
        double err = relativeError(actual, expected);
        assertTrue(err <= tolerance, what + ": relative error " + err + " > " + tolerance);
    }

    static void assertClose(String what, float[] actual, float[] expected, double tolerance) {
        double err = relativeError(actual, expected);
        assertTrue(err <= tolerance, what + ": relative error " + err + " > " + tolerance);
    }
}
