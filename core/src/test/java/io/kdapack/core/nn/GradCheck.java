package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.DoubleSupplier;

/**
 * Central finite differences for the layer tests. The loss is {@code Σ output·dOutput} evaluated in double from
 * the float32 forward pass; inputs and parameters are O(1), the step {@link #STEP} = 1e-2 keeps the truncation error
 * O(h²) ≈ 1e-4 relative and float round-off (≈ 1e-7 / h) near 1e-5, so {@link #TOLERANCE} = 2e-3 relative error
 * over the checked coordinates separates a correct gradient from a missing or wrong term (an O(1) error).
 */
final class GradCheck {
    static final float STEP = 1e-2f;
    static final double TOLERANCE = 2e-3;
    /** Coordinates checked per tensor; larger tensors are sampled (fixed seed). */
    private static final int MAX_COORDINATES = 48;

    private GradCheck() {
    }

    /** Checks {@code analytic} = ∂loss/∂values, perturbing {@code values} in place (restored afterwards). */
    static void assertGradient(String name, float[] analytic, float[] values, DoubleSupplier loss) {
        int[] coordinates = coordinates(values.length);
        double diff = 0;
        double ref = 0;
        for (int i : coordinates) {
            float saved = values[i];
            values[i] = saved + STEP;
            double plus = loss.getAsDouble();
            values[i] = saved - STEP;
            double minus = loss.getAsDouble();
            values[i] = saved;
            double numeric = (plus - minus) / (2 * STEP);
            diff += (analytic[i] - numeric) * (analytic[i] - numeric);
            ref += numeric * numeric;
        }
        assertTrue(ref > 0, name + ": finite differences are all zero, the check would prove nothing");
        double err = Math.sqrt(diff / ref);
        assertTrue(err < TOLERANCE, name + ": relative error " + err + " against central differences");
    }

    private static int[] coordinates(int length) {
        if (length <= MAX_COORDINATES) {
            int[] all = new int[length];
            for (int i = 0; i < length; i++) {
                all[i] = i;
            }
            return all;
        }
        return new Random(length).ints(MAX_COORDINATES, 0, length).toArray();
    }

    static float[] normal(Random random, int n, double std) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) (random.nextGaussian() * std);
        }
        return a;
    }

    static double dot(float[] a, float[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += (double) a[i] * b[i];
        }
        return s;
    }

    /** {@code ‖actual − expected‖ / ‖expected‖}. */
    static double relativeError(float[] actual, float[] expected) {
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < actual.length; i++) {
            diff += ((double) actual[i] - expected[i]) * ((double) actual[i] - expected[i]);
            ref += (double) expected[i] * expected[i];
        }
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }

    /** Random values for every parameter of a layer, and cleared gradients. */
    static void randomize(Layer layer, Random random, double std) {
        for (Parameter p : layer.parameters()) {
            p.initNormal(random, std);
            p.zeroGrad();
        }
    }
}
