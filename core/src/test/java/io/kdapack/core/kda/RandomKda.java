package io.kdapack.core.kda;

import java.util.Random;

/**
 * Random KDA problems for tests, drawn like the golden inputs: q, k, v, dO, dHt, h0 standard normal; g as
 * {@code logsigmoid(randn)} (or the raw gate input, standard normal, when the gate is in the op), a
 * fraction {@code hardResetProbability} of it −1000; beta {@code sigmoid(randn)} or a standard normal logit.
 */
final class RandomKda {

    /** A problem and its upstream gradients. */
    record Problem(KdaInputs inputs, KdaOptions options, float[] dO, float[] dHt) {
    }

    private RandomKda() {
    }

    static Problem packed(long seed, int[] lengths, int heads, int valueHeads, int keyDim, int valueDim,
                          KdaOptions options, boolean initialState, double hardResetProbability) {
        int[] cu = new int[lengths.length + 1];
        for (int n = 0; n < lengths.length; n++) {
            cu[n + 1] = cu[n] + lengths[n];
        }
        Segments segments = Varlen.fromCuSeqlens(cu, cu[lengths.length]);
        return draw(seed, segments, heads, valueHeads, keyDim, valueDim, options, initialState, hardResetProbability);
    }

    static Problem draw(long seed, Segments segments, int heads, int valueHeads, int keyDim, int valueDim,
                        KdaOptions options, boolean initialState, double hardResetProbability) {
        Random rnd = new Random(seed);
        int t = segments.tokens();
        boolean l2 = options.qkL2Norm();
        float[] q = normal(rnd, t * heads * keyDim);
        float[] k = normal(rnd, t * heads * keyDim);
        if (!l2) {
            normalizeRows(q, keyDim);
            normalizeRows(k, keyDim);
        }
        float[] v = normal(rnd, t * valueHeads * valueDim);
        boolean gateInOp = options.gate() != KdaOptions.Gate.NONE;
        float[] g = normal(rnd, t * valueHeads * keyDim);
        for (int i = 0; i < g.length; i++) {
            if (rnd.nextDouble() < hardResetProbability) {
                g[i] = -1000f;
            } else if (!gateInOp) {
                g[i] = (float) -KdaPreprocess.softplus(-g[i]); // logsigmoid
            }
        }
        float[] beta = normal(rnd, t * valueHeads);
        if (!options.betaSigmoid()) {
            for (int i = 0; i < beta.length; i++) {
                beta[i] = KdaPreprocess.sigmoid(beta[i]);
            }
        }
        float[] aLog = null;
        float[] dtBias = null;
        if (gateInOp) {
            aLog = new float[valueHeads];
            for (int i = 0; i < valueHeads; i++) {
                aLog[i] = (float) Math.log(1 + 15 * rnd.nextDouble());
            }
            dtBias = normal(rnd, valueHeads * keyDim);
        }
        int stateSize = segments.count() * valueHeads * keyDim * valueDim;
        float[] h0 = initialState ? normal(rnd, stateSize) : null;
        KdaInputs in = new KdaInputs(segments, heads, valueHeads, keyDim, valueDim, q, k, v, g, beta, aLog, dtBias, h0);
        return new Problem(in, options, normal(rnd, t * valueHeads * valueDim), normal(rnd, stateSize));
    }

    /** The same problem without A_log (for the lower-bound gate without it). */
    static Problem withoutALog(Problem p) {
        KdaInputs i = p.inputs();
        return new Problem(new KdaInputs(i.segments(), i.heads(), i.valueHeads(), i.keyDim(), i.valueDim(), i.q(),
                i.k(), i.v(), i.g(), i.beta(), null, i.dtBias(), i.h0()), p.options(), p.dO(), p.dHt());
    }

    static float[] normal(Random rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }

    private static void normalizeRows(float[] x, int dim) {
        for (int r = 0; r < x.length / dim; r++) {
            double s = 0;
            for (int i = 0; i < dim; i++) {
                s += x[r * dim + i] * x[r * dim + i];
            }
            float inv = (float) (1 / Math.sqrt(s));
            for (int i = 0; i < dim; i++) {
                x[r * dim + i] *= inv;
            }
        }
    }
}
