package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The gate and sigmoid stay finite at the extremes; no positive exponent reaches exp; both gate forms against the
 * same formulas in double.
 */
class KdaPreprocessTest {

    /**
     * Both gate forms, {@code decay = lb·sigmoid(exp(A_log)·x)} and {@code −exp(A_log)·softplus(x)} with
     * {@code x = g + dt_bias}, and their gradients with respect to g, dt_bias and A_log, against the formulas
     * evaluated in double from the same float inputs, at K = 20 (a vector body and a scalar tail at every width),
     * 3 value heads, 37 tokens of 2 documents, pre-activations from −60 to 60. Tolerance 5e-7: the op computes the
     * sigmoid, its slope {@code e/(1+e)²} and softplus in float (a few float32 roundings); dt_bias and A_log are sums
     * over tokens of such terms in double. Measured, lower bound: decay 3.7e-8, dg 7.7e-8, dt_bias 9.4e-8, A_log
     * 1.1e-7 (the scalar double sigmoid before, with {@code σ·(1 − σ)}: 2.6e-8, 1.9e-7, 1.7e-7, 6.4e-7: its
     * {@code 1 − σ} lost digits where σ nears 1); softplus: 4.6e-8, 5.2e-8, 6.4e-8, 2.6e-8 (in double before: 3.7e-8,
     * 4.0e-8, 5.0e-8, 3.0e-8).
     */
    @ParameterizedTest
    @EnumSource(value = KdaOptions.Gate.class, names = {"LOWER_BOUND", "SOFTPLUS"})
    void gatesAndTheirGradientsMatchTheFormulasInDouble(KdaOptions.Gate form) {
        int heads = 3;
        int keyDim = 20;
        float lowerBound = -3f;
        KdaOptions options = KdaOptions.layer(form, lowerBound);
        RandomKda.Problem p = RandomKda.packed(71, new int[] {30, 7}, heads, heads, keyDim, 4, options, false, 0);
        KdaInputs raw = p.inputs();
        Random rnd = new Random(5);
        float[] g = raw.g();
        for (int i = 0; i < g.length; i++) {
            g[i] = (float) (rnd.nextDouble() * 40 - 20);
        }
        float[] aLog = raw.aLog();
        for (int vh = 0; vh < heads; vh++) {
            aLog[vh] = (float) Math.log(0.5 + vh); // exp(A_log) 0.5, 1.5, 2.5: pre-activations up to ±60
        }
        int tokens = raw.tokens();
        KdaPreprocess.Prepared prepared = KdaPreprocess.forward(raw, options);
        float[] dDecay = new float[prepared.decay().length];
        for (int i = 0; i < dDecay.length; i++) {
            dDecay[i] = (float) rnd.nextGaussian();
        }
        KdaPreprocess.RawGradients grads = KdaPreprocess.backward(raw, options, prepared,
                new float[prepared.q().length], new float[prepared.k().length], dDecay, new float[tokens * heads]);
        double[] decay = new double[dDecay.length];
        double[] dg = new double[g.length];
        double[] dDtBias = new double[heads * keyDim];
        double[] dALog = new double[heads];
        for (int t = 0; t < tokens; t++) {
            for (int vh = 0; vh < heads; vh++) {
                double a = Math.exp(aLog[vh]);
                for (int i = 0; i < keyDim; i++) {
                    double x = (double) g[(t * heads + vh) * keyDim + i] + raw.dtBias()[vh * keyDim + i];
                    int headMajor = (vh * tokens + t) * keyDim + i;
                    double value;
                    double dValueDx;
                    double dValueDALog;
                    if (form == KdaOptions.Gate.LOWER_BOUND) {
                        double sig = 1 / (1 + Math.exp(-a * x));
                        value = lowerBound * sig;
                        dValueDx = lowerBound * sig * (1 - sig) * a;
                        dValueDALog = dValueDx * x;
                    } else {
                        value = -a * (Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x))));
                        dValueDx = -a / (1 + Math.exp(-x));
                        dValueDALog = value;
                    }
                    decay[headMajor] = value;
                    dg[(t * heads + vh) * keyDim + i] = dDecay[headMajor] * dValueDx;
                    dDtBias[vh * keyDim + i] += dDecay[headMajor] * dValueDx;
                    dALog[vh] += dDecay[headMajor] * dValueDALog;
                }
            }
        }
        assertClose(form + " decay", prepared.decay(), decay, 5e-7);
        assertClose(form + " dg", grads.dg(), dg, 5e-7);
        assertClose(form + " dt_bias", grads.dDtBias(), dDtBias, 5e-7);
        assertClose(form + " A_log", grads.dALog(), dALog, 5e-7);
    }

    /**
     * The float softplus against {@code Math.log1p} in double from −30 to 30 and its {@code log1p} on [0, 1], where
     * {@code 1 + e} rounds (e below 6e-8) and across the halving at √2: within 4 float32 ulps (5e-7 relative).
     */
    @Test
    void floatSoftplusAndLog1pAreWithinAFewUlps() {
        for (int i = -3000; i <= 3000; i++) {
            float x = i / 100f;
            double expected = Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs((double) x)));
            float actual = KdaPreprocess.floatSoftplus(x);
            assertEquals(expected, actual, 5e-7 * expected, "softplus(" + x + ")");
        }
        float[] points = {0f, 1e-9f, 5e-8f, 1e-7f, 1e-4f, 0.1f, 0.41421f, 0.41422f, 0.5f, 0.99f, 1f};
        for (float e : points) {
            double expected = Math.log1p(e);
            assertEquals(expected, KdaPreprocess.floatLog1pOfUnit(e), 5e-7 * expected, "log1p(" + e + ")");
        }
    }

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

    /**
     * The chunks' exp within 4e-7 relative of {@code Math.exp} down to the cut at −64, exactly 0 below it (down to
     * the gates of −1000 of a hard reset), on vectors and in the scalar tail alike: no result is subnormal.
     */
    @Test
    void vectorExpMatchesMathExpOnTheNonPositiveRangeAndIsZeroBelowTheCut() {
        float[] x = new float[4099];
        for (int i = 0; i < x.length; i++) {
            x[i] = -100f * i / x.length;
        }
        x[x.length - 1] = -1000f;
        x[x.length - 2] = ChunkMath.EXP_CUTOFF;
        x[x.length - 3] = Math.nextDown(ChunkMath.EXP_CUTOFF);
        float[] y = new float[x.length];
        ChunkMath.exp(x.length, x, 0, y, 0);
        for (int i = 0; i < x.length; i++) {
            double expected = Math.exp(x[i]);
            assertEquals(y[i], ChunkMath.exp(x[i]), "the scalar exp(" + x[i] + ")");
            if (x[i] < ChunkMath.EXP_CUTOFF) {
                assertEquals(0f, y[i], "exp(" + x[i] + ") is cut to zero");
            } else {
                assertEquals(expected, y[i], 4e-7 * expected, "exp(" + x[i] + ")");
                assertTrue(y[i] >= Float.MIN_NORMAL, "exp(" + x[i] + ") is a normal float");
            }
        }
    }
}
