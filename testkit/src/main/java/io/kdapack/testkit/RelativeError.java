package io.kdapack.testkit;

/**
 * The error measure every numerical test uses: {@code ‖out − ref‖ / ‖ref‖} (Euclidean norms, accumulated in double),
 * or {@code ‖out‖} when the reference is all zeros, so that a zero reference still demands a zero result.
 */
public final class RelativeError {

    private RelativeError() {
    }

    public static double of(float[] actual, double[] expected) {
        requireSameLength(actual.length, expected.length);
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = actual[i] - expected[i];
            diff += d * d;
            norm += expected[i] * expected[i];
        }
        return ratio(diff, norm);
    }

    public static double of(float[] actual, float[] expected) {
        requireSameLength(actual.length, expected.length);
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = (double) actual[i] - expected[i];
            diff += d * d;
            norm += (double) expected[i] * expected[i];
        }
        return ratio(diff, norm);
    }

    public static double of(double[] actual, double[] expected) {
        requireSameLength(actual.length, expected.length);
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = actual[i] - expected[i];
            diff += d * d;
            norm += expected[i] * expected[i];
        }
        return ratio(diff, norm);
    }

    private static double ratio(double diff, double norm) {
        return norm == 0 ? Math.sqrt(diff) : Math.sqrt(diff / norm);
    }

    private static void requireSameLength(int actual, int expected) {
        if (actual != expected) {
            throw new AssertionError("length " + actual + ", expected " + expected);
        }
    }
}
