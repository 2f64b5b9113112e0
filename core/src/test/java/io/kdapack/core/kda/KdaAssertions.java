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

    /**
     * The chunked backend against the token-by-token reference on one problem, both in float32 with different
     * summation orders: outputs and final states within 1e-5, gradients within 1e-4 (the golden files' tolerances;
     * each side lands within ~1e-7 of float64 there, so these catch any algebra error), and every value finite.
     */
    static void assertChunkedMatchesRecurrent(String name, RandomKda.Problem p) {
        KdaBackend reference = new KdaRecurrent(2);
        KdaBackend chunked = new KdaChunked(2);
        KdaBackend.KdaResult r = reference.forward(p.inputs(), p.options());
        KdaBackend.KdaResult c = chunked.forward(p.inputs(), p.options());
        assertClose(name + " o", c.o(), r.o(), 1e-5);
        assertClose(name + " ht", c.ht(), r.ht(), 1e-5);
        KdaBackend.KdaGradients gr = reference.backward(p.inputs(), p.options(), p.dO(), p.dHt());
        KdaBackend.KdaGradients gc = chunked.backward(p.inputs(), p.options(), p.dO(), p.dHt());
        assertClose(name + " dq", gc.dq(), gr.dq(), 1e-4);
        assertClose(name + " dk", gc.dk(), gr.dk(), 1e-4);
        assertClose(name + " dv", gc.dv(), gr.dv(), 1e-4);
        assertClose(name + " dg", gc.dg(), gr.dg(), 1e-4);
        assertClose(name + " dbeta", gc.dBeta(), gr.dBeta(), 1e-4);
        if (gr.dH0() != null) {
            assertClose(name + " dh0", gc.dH0(), gr.dH0(), 1e-4);
        }
        if (gr.dALog() != null) {
            assertClose(name + " dA_log", gc.dALog(), gr.dALog(), 1e-4);
        }
        if (gr.dDtBias() != null) {
            assertClose(name + " ddt_bias", gc.dDtBias(), gr.dDtBias(), 1e-4);
        }
        assertAllFinite(name, c.o(), c.ht(), gc.dq(), gc.dk(), gc.dv(), gc.dg(), gc.dBeta());
    }

    private static void assertAllFinite(String name, float[]... arrays) {
        for (float[] a : arrays) {
            for (float x : a) {
                assertTrue(Float.isFinite(x), name + ": non-finite value " + x);
            }
        }
    }
}
