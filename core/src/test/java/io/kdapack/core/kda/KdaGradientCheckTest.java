package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Finite-difference checks of every gradient on tiny cases: for a random direction {@code u} per input,
 * the directional derivative {@code ⟨dX, u⟩} (relative to its typical size {@code ‖dX‖}) against a Richardson-extrapolated central difference of
 * {@code L = Σ o·dO + Σ ht·dHt} (truncation error O(ε⁴)). The op runs in float32, so the difference
 * carries ~1e-7·|L|/ε of round-off; with ε = 0.02 the tolerance is 1e-3 relative (observed: 3e-7…2e-5) — loose next to double,
 * tight enough that any wrong term (typically a relative error of order 1) fails.
 */
class KdaGradientCheckTest {

    private static final double EPSILON = 0.02;
    private static final double TOLERANCE = 1e-3;

    static Stream<Arguments> cases() {
        KdaOptions softplus = new KdaOptions(0.7f, true, KdaOptions.Gate.SOFTPLUS, 0f, true);
        KdaOptions lowerBound = KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -3f);
        Stream.Builder<Arguments> b = Stream.builder();
        for (KdaBackend backend : new KdaBackend[] {new KdaChunked(1), new KdaRecurrent(1)}) {
            b.add(Arguments.of("plain GVA", backend,
                    RandomKda.packed(41, new int[] {5, 0, 3}, 1, 2, 4, 3, KdaOptions.plain(), true, 0)));
            b.add(Arguments.of("softplus gate", backend,
                    RandomKda.packed(42, new int[] {6, 2}, 1, 1, 5, 3, softplus, true, 0)));
            b.add(Arguments.of("lower-bound gate", backend,
                    RandomKda.packed(43, new int[] {4, 5}, 2, 2, 3, 4, lowerBound, true, 0)));
            b.add(Arguments.of("lower-bound gate without A_log", backend, RandomKda.withoutALog(
                    RandomKda.packed(44, new int[] {7}, 1, 1, 4, 4, lowerBound, false, 0))));
        }
        return b.build();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void gradientsMatchFiniteDifferences(String name, KdaBackend backend, RandomKda.Problem p) {
        KdaInputs in = p.inputs();
        KdaBackend.KdaGradients g = backend.backward(in, p.options(), p.dO(), p.dHt());
        Random rnd = new Random(7);
        check(name + " q", backend, p, in.q(), g.dq(), rnd, x -> with(in, x, in.k(), in.v(), in.g(), in.beta(), in.aLog(), in.dtBias(), in.h0()));
        check(name + " k", backend, p, in.k(), g.dk(), rnd, x -> with(in, in.q(), x, in.v(), in.g(), in.beta(), in.aLog(), in.dtBias(), in.h0()));
        check(name + " v", backend, p, in.v(), g.dv(), rnd, x -> with(in, in.q(), in.k(), x, in.g(), in.beta(), in.aLog(), in.dtBias(), in.h0()));
        check(name + " g", backend, p, in.g(), g.dg(), rnd, x -> with(in, in.q(), in.k(), in.v(), x, in.beta(), in.aLog(), in.dtBias(), in.h0()));
        check(name + " beta", backend, p, in.beta(), g.dBeta(), rnd, x -> with(in, in.q(), in.k(), in.v(), in.g(), x, in.aLog(), in.dtBias(), in.h0()));
        if (in.aLog() != null) {
            check(name + " A_log", backend, p, in.aLog(), g.dALog(), rnd, x -> with(in, in.q(), in.k(), in.v(), in.g(), in.beta(), x, in.dtBias(), in.h0()));
        }
        if (in.dtBias() != null) {
            check(name + " dt_bias", backend, p, in.dtBias(), g.dDtBias(), rnd, x -> with(in, in.q(), in.k(), in.v(), in.g(), in.beta(), in.aLog(), x, in.h0()));
        }
        if (in.h0() != null) {
            check(name + " h0", backend, p, in.h0(), g.dH0(), rnd, x -> with(in, in.q(), in.k(), in.v(), in.g(), in.beta(), in.aLog(), in.dtBias(), x));
        }
    }

    private static void check(String what, KdaBackend backend, RandomKda.Problem p, float[] x, float[] grad, Random rnd,
                              Function<float[], KdaInputs> rebuild) {
        double[] u = new double[x.length];
        double analytic = 0;
        double gradNormSq = 0;
        for (int i = 0; i < x.length; i++) {
            u[i] = rnd.nextGaussian();
            analytic += u[i] * grad[i];
            gradNormSq += (double) grad[i] * grad[i];
        }
        // A random direction's derivative is typically ‖grad‖ in size; one that happens to be near zero is
        // judged against that scale rather than against itself.
        double typical = Math.sqrt(gradNormSq);
        double coarse = centralDifference(backend, p, x, u, EPSILON, rebuild);
        double fine = centralDifference(backend, p, x, u, EPSILON / 2, rebuild);
        double numeric = (4 * fine - coarse) / 3;
        double err = Math.abs(numeric - analytic) / Math.max(Math.abs(numeric), typical);
        assertTrue(err <= TOLERANCE, what + ": analytic " + analytic + " vs numeric " + numeric + " (rel " + err + ")");
    }

    private static double centralDifference(KdaBackend backend, RandomKda.Problem p, float[] x, double[] u, double eps,
                                            Function<float[], KdaInputs> rebuild) {
        return (loss(backend, p, rebuild.apply(shift(x, u, eps))) - loss(backend, p, rebuild.apply(shift(x, u, -eps))))
                / (2 * eps);
    }

    private static float[] shift(float[] x, double[] u, double eps) {
        float[] y = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = (float) (x[i] + eps * u[i]);
        }
        return y;
    }

    private static double loss(KdaBackend backend, RandomKda.Problem p, KdaInputs in) {
        KdaBackend.KdaResult r = backend.forward(in, p.options());
        double l = 0;
        for (int i = 0; i < r.o().length; i++) {
            l += (double) r.o()[i] * p.dO()[i];
        }
        for (int i = 0; i < r.ht().length; i++) {
            l += (double) r.ht()[i] * p.dHt()[i];
        }
        return l;
    }

    private static KdaInputs with(KdaInputs in, float[] q, float[] k, float[] v, float[] g, float[] beta, float[] aLog,
                                  float[] dtBias, float[] h0) {
        return new KdaInputs(in.segments(), in.heads(), in.valueHeads(), in.keyDim(), in.valueDim(), q, k, v, g, beta,
                aLog, dtBias, h0);
    }
}
