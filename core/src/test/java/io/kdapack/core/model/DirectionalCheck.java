package io.kdapack.core.model;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.DoubleSupplier;

/**
 * Finite-difference check of a whole gradient tensor at once: along a random unit direction {@code u} (fixed seed),
 * the central difference {@code (L(θ + h·u) − L(θ − h·u)) / 2h} must equal {@code g·u}. The error is measured against
 * {@code ‖g‖} (for a random direction {@code |g·u| ≈ ‖g‖/√n}, and a missing or wrong term of the gradient shifts the
 * result by O(its size)), so the check covers every coordinate with two evaluations of the loss.
 */
public final class DirectionalCheck {

    private DirectionalCheck() {
    }

    /** Returns {@code |numeric − g·u| / ‖g‖}; fails when the gradient is zero (the check would prove nothing). */
    public static double error(String name, float[] analytic, float[] values, DoubleSupplier loss, float step, long seed) {
        Random random = new Random(seed);
        double[] u = new double[values.length];
        double norm = 0;
        for (int i = 0; i < u.length; i++) {
            u[i] = random.nextGaussian();
            norm += u[i] * u[i];
        }
        norm = Math.sqrt(norm);
        double expected = 0;
        double gradNorm = 0;
        for (int i = 0; i < u.length; i++) {
            u[i] /= norm;
            expected += analytic[i] * u[i];
            gradNorm += (double) analytic[i] * analytic[i];
        }
        gradNorm = Math.sqrt(gradNorm);
        assertTrue(gradNorm > 0, name + ": the gradient is zero, the check would prove nothing");
        float[] saved = values.clone();
        for (int i = 0; i < u.length; i++) {
            values[i] = (float) (saved[i] + step * u[i]);
        }
        double plus = loss.getAsDouble();
        for (int i = 0; i < u.length; i++) {
            values[i] = (float) (saved[i] - step * u[i]);
        }
        double minus = loss.getAsDouble();
        // The perturbation actually applied is the float-rounded one: measure it, do not assume it.
        double applied = 0;
        for (int i = 0; i < u.length; i++) {
            applied += ((double) ((float) (saved[i] + step * u[i])) - (float) (saved[i] - step * u[i])) * u[i];
        }
        System.arraycopy(saved, 0, values, 0, values.length);
        double numeric = (plus - minus) / applied;
        return Math.abs(numeric - expected) / gradNorm;
    }
}
