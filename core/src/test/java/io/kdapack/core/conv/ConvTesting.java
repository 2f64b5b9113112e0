package io.kdapack.core.conv;

import io.kdapack.core.kda.Segments;
import java.util.Random;

/** Helpers shared by the short-convolution tests. */
final class ConvTesting {

    private ConvTesting() {
    }

    /** {@code ‖actual − expected‖ / ‖expected‖}; the absolute norm when the reference is all zeros. */
    static double relativeError(float[] actual, double[] expected) {
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < actual.length; i++) {
            diff += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            ref += expected[i] * expected[i];
        }
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }

    static double relativeError(float[] actual, float[] expected) {
        double[] e = new double[expected.length];
        for (int i = 0; i < e.length; i++) {
            e[i] = expected[i];
        }
        return relativeError(actual, e);
    }

    static float[] normal(Random random, int n, double scale) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) (random.nextGaussian() * scale);
        }
        return a;
    }

    static Segments packed(int... lengths) {
        int[] starts = new int[lengths.length];
        int[] ends = new int[lengths.length];
        int t = 0;
        for (int n = 0; n < lengths.length; n++) {
            starts[n] = t;
            t += lengths[n];
            ends[n] = t;
        }
        return new Segments(t, starts, ends);
    }
}
