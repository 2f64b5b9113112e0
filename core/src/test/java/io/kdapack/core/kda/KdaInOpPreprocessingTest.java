package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The in-op preprocessing against references computed outside the code under test. Both CPU backends share
 * {@link KdaPreprocess}, so comparing one with the other cannot see a change there: here the op with its in-op l2 norm
 * is compared with the plain op given rows normalised in double ({@code x / sqrt(Σx² + 1e-6)}, FLA's l2norm), its
 * gradients with the exact Jacobian of that normalisation applied to the plain op's gradients; {@code softplus} with
 * the JDK's {@code Math.log1p}; and the blocks of tokens the preprocessing is split into with the documented rule.
 */
class KdaInOpPreprocessingTest {

    /** FLA's {@code l2norm} epsilon, inside the square root. */
    private static final double FLA_L2NORM_EPS = 1e-6;

    /**
     * Rows of q and k far smaller than the epsilon (Σx² ≈ 1e-7) or comparable to it (≈ 1e-5) are divided by
     * {@code sqrt(Σx² + eps)}; any other treatment of the epsilon gives those rows an error of order 1 (or NaN).
     * Tolerances: the two sides round the normalised rows differently (one float32 rounding each, ~6e-8), which the
     * op carries to outputs and states (1e-6 allowed) and to gradients, whose Jacobian is applied in float on one side
     * and in double on the other (1e-5 allowed); measured: at most 1.2e-7 for every tensor, both backends.
     */
    @Test
    void l2NormDividesByTheRootOfTheSumOfSquaresPlusEpsilonAndItsGradientIsTheExactJacobian() {
        KdaOptions l2 = new KdaOptions(Float.NaN, true, KdaOptions.Gate.NONE, 0f, false);
        KdaOptions plain = new KdaOptions(Float.NaN, false, KdaOptions.Gate.NONE, 0f, false);
        int heads = 2;
        int keyDim = 8;
        RandomKda.Problem p = RandomKda.packed(61, new int[] {30, 1, 45}, heads, 4, keyDim, 8, l2, true, 0);
        KdaInputs in = p.inputs();
        float[] q = in.q().clone();
        float[] k = in.k().clone();
        for (int row = 0; row < q.length / keyDim; row++) {
            scaleRow(q, row, keyDim, row % 3 == 0 ? 1e-4f : row % 3 == 1 ? 1e-3f : 1f);
            scaleRow(k, row, keyDim, row % 4 == 0 ? 1e-3f : row % 4 == 1 ? 1e-4f : 1f);
        }
        double[] qNorms = norms(q, keyDim);
        double[] kNorms = norms(k, keyDim);
        KdaInputs raw = with(in, q, k);
        KdaInputs normalised = with(in, normalise(q, qNorms, keyDim), normalise(k, kNorms, keyDim));
        for (KdaBackend backend : new KdaBackend[] {new KdaChunked(2), new KdaRecurrent(2)}) {
            String name = backend.name() + " ";
            KdaBackend.KdaResult withNorm = backend.forward(raw, l2);
            KdaBackend.KdaResult reference = backend.forward(normalised, plain);
            assertClose(name + "o", withNorm.o(), reference.o(), 1e-6);
            assertClose(name + "ht", withNorm.ht(), reference.ht(), 1e-6);
            KdaBackend.KdaGradients g = backend.backward(raw, l2, p.dO(), p.dHt());
            KdaBackend.KdaGradients gRef = backend.backward(normalised, plain, p.dO(), p.dHt());
            assertClose(name + "dq", g.dq(), jacobianTransposeTimes(q, qNorms, gRef.dq(), keyDim), 1e-5);
            assertClose(name + "dk", g.dk(), jacobianTransposeTimes(k, kNorms, gRef.dk(), keyDim), 1e-5);
            assertClose(name + "dv", g.dv(), gRef.dv(), 1e-5);
            assertClose(name + "dg", g.dg(), gRef.dg(), 1e-5);
            assertClose(name + "dbeta", g.dBeta(), gRef.dBeta(), 1e-5);
            assertClose(name + "dh0", g.dH0(), gRef.dH0(), 1e-5);
        }
    }

    /**
     * {@code softplus(x) = log(1 + exp(x))} to the double precision its Javadoc promises (2e-12 relative), on both
     * sides of the switch to the short series at {@code exp(−|x|) = 1e-4} ({@code |x| ≈ 9.21}) and far out; the
     * reference is the JDK's {@code Math.log1p} (fdlibm, within 1 ulp).
     */
    @Test
    void softplusIsLog1pOfExpToDoublePrecisionOnBothSidesOfItsSeriesSwitch() {
        for (int i = -4000; i <= 4000; i++) {
            double x = i / 100.0;
            double expected = x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
            double actual = KdaPreprocess.softplus(x);
            assertTrue(Math.abs(actual - expected) <= 2e-12 * expected,
                    "softplus(" + x + ") = " + actual + ", expected " + expected);
        }
    }

    /**
     * The preprocessing works in blocks of {@link KdaPreprocess#TOKEN_BLOCK} tokens fixed by the token count alone,
     * {@code ceil(T / 256)} of them (the backward holds {@code HV·K + HV} doubles of partial sums per block), and gives
     * the same bits whatever order the runner takes them in: forward and backward with the blocks run last to first
     * against the serial overloads.
     */
    @Test
    void theTokenBlocksAreFixedByTheTokenCountAndTheirOrderChangesNoBit() {
        KdaOptions options = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
        for (int tokens : new int[] {1, 255, 256, 257, 511, 512, 600}) {
            RandomKda.Problem p = RandomKda.packed(70 + tokens, new int[] {tokens / 3, tokens - tokens / 3}, 1, 2, 4,
                    4, options, false, 0);
            KdaInputs in = p.inputs();
            in.validate(options);
            List<Integer> counts = new ArrayList<>();
            KdaPreprocess.BlockRunner reversed = (count, block) -> {
                counts.add(count);
                for (int b = count - 1; b >= 0; b--) {
                    block.accept(b);
                }
            };
            KdaPreprocess.Prepared serial = KdaPreprocess.forward(in, options);
            KdaPreprocess.Prepared backwards = KdaPreprocess.forward(in, options, reversed, float[]::new);
            String t = "T = " + tokens + " ";
            assertArrayEquals(serial.q(), backwards.q(), t + "q");
            assertArrayEquals(serial.k(), backwards.k(), t + "k");
            assertArrayEquals(serial.decay(), backwards.decay(), t + "decay");
            assertArrayEquals(serial.beta(), backwards.beta(), t + "beta");
            java.util.Random rnd = new java.util.Random(tokens);
            int rows = tokens * in.valueHeads();
            float[] dq = RandomKda.normal(rnd, rows * in.keyDim());
            float[] dk = RandomKda.normal(rnd, rows * in.keyDim());
            float[] dDecay = RandomKda.normal(rnd, rows * in.keyDim());
            float[] dBeta = RandomKda.normal(rnd, rows);
            KdaPreprocess.RawGradients one = KdaPreprocess.backward(in, options, serial, dq, dk, dDecay, dBeta);
            KdaPreprocess.RawGradients other = KdaPreprocess.backward(in, options, backwards, dq, dk, dDecay, dBeta,
                    reversed);
            assertArrayEquals(one.dq(), other.dq(), t + "dq");
            assertArrayEquals(one.dk(), other.dk(), t + "dk");
            assertArrayEquals(one.dg(), other.dg(), t + "dg");
            assertArrayEquals(one.dBeta(), other.dBeta(), t + "dbeta");
            assertArrayEquals(one.dALog(), other.dALog(), t + "dA_log");
            assertArrayEquals(one.dDtBias(), other.dDtBias(), t + "ddt_bias");
            int blocks = (tokens + 255) / 256;
            // The forward, the backward, and the backward's sums over tokens for A_log and dt_bias.
            assertEquals(List.of(blocks, blocks, blocks, blocks), counts,
                    t + "blocks of the forward, the backward and its sums");
        }
    }

    private static void scaleRow(float[] x, int row, int dim, float factor) {
        for (int i = 0; i < dim; i++) {
            x[row * dim + i] *= factor;
        }
    }

    /** {@code sqrt(Σx² + eps)} of each row, in double. */
    private static double[] norms(float[] x, int dim) {
        double[] out = new double[x.length / dim];
        for (int r = 0; r < out.length; r++) {
            double s = 0;
            for (int i = 0; i < dim; i++) {
                s += (double) x[r * dim + i] * x[r * dim + i];
            }
            out[r] = Math.sqrt(s + FLA_L2NORM_EPS);
        }
        return out;
    }

    private static float[] normalise(float[] x, double[] norms, int dim) {
        float[] out = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = (float) (x[i] / norms[i / dim]);
        }
        return out;
    }

    /** {@code Jᵀ·dy} per row for {@code y = x / n}, {@code n = sqrt(Σx² + eps)}: {@code dy/n − x (x·dy)/n³}. */
    private static double[] jacobianTransposeTimes(float[] x, double[] norms, float[] dy, int dim) {
        double[] out = new double[x.length];
        for (int r = 0; r < norms.length; r++) {
            double dot = 0;
            for (int i = 0; i < dim; i++) {
                dot += (double) x[r * dim + i] * dy[r * dim + i];
            }
            double n = norms[r];
            for (int i = 0; i < dim; i++) {
                out[r * dim + i] = dy[r * dim + i] / n - x[r * dim + i] * dot / (n * n * n);
            }
        }
        return out;
    }

    private static KdaInputs with(KdaInputs in, float[] q, float[] k) {
        return new KdaInputs(in.segments(), in.heads(), in.valueHeads(), in.keyDim(), in.valueDim(), q, k, in.v(),
                in.g(), in.beta(), in.aLog(), in.dtBias(), in.h0());
    }
}
