package io.kdapack.core.conv;

import io.kdapack.core.kda.Segments;
import java.util.Random;

/** Helpers shared by the short-convolution tests. */
final class ConvTesting {

    private ConvTesting() {
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
