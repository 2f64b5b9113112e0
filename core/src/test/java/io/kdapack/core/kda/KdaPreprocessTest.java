package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The gate and sigmoid stay finite at the extremes; no positive exponent reaches exp. */
class KdaPreprocessTest {

    @Test
    void softplusAndSigmoidAreFiniteForExtremeInputs() {
        assertEquals(1000.0, KdaPreprocess.softplus(1000), 1e-12);
        assertEquals(0.0, KdaPreprocess.softplus(-1000), 1e-300);
        assertEquals(Math.log(2), KdaPreprocess.softplus(0), 1e-15);
        assertEquals(1f, KdaPreprocess.sigmoid(1000));
        assertEquals(0f, KdaPreprocess.sigmoid(-1000));
        assertEquals(0.5f, KdaPreprocess.sigmoid(0));
    }

    @Test
    void gateOfMinus1000GivesFiniteDecayAndFiniteGradients() {
        for (KdaOptions options : new KdaOptions[] {KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f),
                KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f)}) {
            RandomKda.Problem p = RandomKda.packed(51, new int[] {20}, 1, 1, 4, 4, options, false, 0.5);
            float[] g = p.inputs().g();
            g[0] = -1000f;
            g[1] = 1000f;
            KdaPreprocess.Prepared prepared = KdaPreprocess.forward(p.inputs(), options);
            for (float d : prepared.decay()) {
                assertTrue(Float.isFinite(d) && d <= 0f, options.gate() + ": decay " + d);
            }
            KdaBackend.KdaGradients grads = new KdaChunked(1).backward(p.inputs(), options, p.dO(), p.dHt());
            for (float[] a : new float[][] {grads.dq(), grads.dk(), grads.dv(), grads.dg(), grads.dBeta(),
                    grads.dALog(), grads.dDtBias()}) {
                for (float x : a) {
                    assertTrue(Float.isFinite(x), options.gate() + ": gradient " + x);
                }
            }
        }
    }

    @Test
    void vectorExpMatchesMathExpOnTheNonPositiveRange() {
        float[] x = new float[4096];
        for (int i = 0; i < x.length; i++) {
            x[i] = -100f * i / x.length;
        }
        float[] y = new float[x.length];
        ChunkMath.exp(x.length, x, 0, y, 0);
        for (int i = 0; i < x.length; i++) {
            double expected = Math.exp(x[i]);
            if (x[i] <= -88f) {
                assertEquals(0f, y[i], "exp(" + x[i] + ") flushes to zero");
            } else if (x[i] < -87f) {
                assertEquals(expected, y[i], Float.MIN_NORMAL, "exp(" + x[i] + ") near the subnormal range");
            } else {
                assertEquals(expected, y[i], 4e-7 * expected, "exp(" + x[i] + ")");
            }
        }
    }
}
