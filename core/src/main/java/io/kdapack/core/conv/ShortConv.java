package io.kdapack.core.conv;

import io.kdapack.core.kda.Segments;
import java.util.stream.IntStream;

/**
 * Depthwise causal short convolution over packed sequences (FLA {@code ShortConvolution} semantics), forward
 * and backward. For channel {@code d} and a token {@code t} of sequence {@code n} starting at {@code s}:
 *
 * <pre>
 * z[t,d] = bias[d] + Σ_{i<W} weight[d,i] · in(t − (W−1) + i, d)
 * y[t,d] = act(z[t,d])
 * in(p, d) = x[p,d]                              for p ≥ s
 *          = initialState[n, d, W − (s − p)]     for p &lt; s (0 without an initial state)
 * </pre>
 *
 * so a sequence never reads across its start. The final state of sequence {@code n} (length {@code L}) is
 * {@code ext[:, L … L+W−1]} with {@code ext = [initialState[n] | x[s … s+L−1]ᵀ]}: its last W inputs, left-filled
 * from the initial state when {@code L < W}. Padding positions give {@code y = 0} and {@code dx = 0}.
 *
 * <p>Work is split into blocks of channels that run in parallel; every channel is computed by one thread in a
 * fixed order, so results do not depend on the thread count.
 */
public final class ShortConv {
    /** Channels per parallel task: enough work per task, few enough to keep both cores busy at D = 16. */
    private static final int CHANNEL_BLOCK = 8;

    private ShortConv() {
    }

    /** Outputs {@code y [T,D]} and final states {@code [N,D,W]}. */
    public static ShortConvOutputs forward(ShortConvInputs in) {
        float[] y = new float[in.tokens() * in.channels()];
        float[] finalState = new float[in.sequences() * in.channels() * in.width()];
        forEachChannelBlock(in, (d0, d1) -> {
            Segments seg = in.segments();
            for (int n = 0; n < seg.count(); n++) {
                for (int t = seg.start(n); t < seg.end(n); t++) {
                    for (int d = d0; d < d1; d++) {
                        y[t * in.channels() + d] = in.activation().apply(preActivation(in, n, t, d));
                    }
                }
                for (int d = d0; d < d1; d++) {
                    writeFinalState(in, n, d, finalState);
                }
            }
        });
        return new ShortConvOutputs(y, finalState);
    }

    /**
     * Gradients of {@code L = Σ y·dy + Σ finalState·dFinalState}.
     *
     * @param dy          {@code [T,D]} upstream gradient of y (values at padding positions are ignored)
     * @param dFinalState {@code [N,D,W]} upstream gradient of the final states, or null for none
     */
    public static ShortConvGradients backward(ShortConvInputs in, float[] dy, float[] dFinalState) {
        int tokens = in.tokens();
        int channels = in.channels();
        int width = in.width();
        ShortConvInputs.checkLength("dy", dy, (long) tokens * channels, "[T,D] = [" + tokens + "," + channels + "]");
        if (dFinalState != null) {
            ShortConvInputs.checkLength("dFinalState", dFinalState, (long) in.sequences() * channels * width,
                    "[N,D,W] = [" + in.sequences() + "," + channels + "," + width + "]");
        }
        float[] dx = new float[tokens * channels];
        float[] dweight = new float[channels * width];
        float[] dbias = in.bias() == null ? null : new float[channels];
        float[] dinit = in.initialState() == null ? null : new float[in.initialState().length];
        forEachChannelBlock(in, (d0, d1) -> {
            Segments seg = in.segments();
            for (int d = d0; d < d1; d++) {
                // Sums over all tokens in double: they collect round-off from every position.
                double biasSum = 0;
                double[] weightSum = new double[width];
                for (int n = 0; n < seg.count(); n++) {
                    int start = seg.start(n);
                    for (int t = start; t < seg.end(n); t++) {
                        float dz = dy[t * channels + d] * in.activation().derivative(preActivation(in, n, t, d));
                        biasSum += dz;
                        for (int i = 0; i < width; i++) {
                            int p = t - (width - 1) + i;
                            weightSum[i] += (double) dz * input(in, n, start, p, d);
                            float contribution = in.weight()[d * width + i] * dz;
                            if (p >= start) {
                                dx[p * channels + d] += contribution;
                            } else if (dinit != null) {
                                dinit[stateIndex(in, n, d, width - (start - p))] += contribution;
                            }
                        }
                    }
                    if (dFinalState != null) {
                        backpropagateFinalState(in, n, d, dFinalState, dx, dinit);
                    }
                }
                if (dbias != null) {
                    dbias[d] = (float) biasSum;
                }
                for (int i = 0; i < width; i++) {
                    dweight[d * width + i] = (float) weightSum[i];
                }
            }
        });
        return new ShortConvGradients(dx, dweight, dbias, dinit);
    }

    private static float preActivation(ShortConvInputs in, int n, int t, int d) {
        int width = in.width();
        int start = in.segments().start(n);
        float z = in.bias() == null ? 0f : in.bias()[d];
        for (int i = 0; i < width; i++) {
            z += in.weight()[d * width + i] * input(in, n, start, t - (width - 1) + i, d);
        }
        return z;
    }

    /** {@code in(p, d)} for sequence n starting at {@code start}: x, or the initial state before the start. */
    private static float input(ShortConvInputs in, int n, int start, int p, int d) {
        if (p >= start) {
            return in.x()[p * in.channels() + d];
        }
        return in.initialState() == null ? 0f : in.initialState()[stateIndex(in, n, d, in.width() - (start - p))];
    }

    /** Column c of the final state is {@code ext[L + c]}: initial-state column L+c, or input s+L+c−W. */
    private static void writeFinalState(ShortConvInputs in, int n, int d, float[] finalState) {
        int width = in.width();
        int length = in.segments().length(n);
        for (int c = 0; c < width; c++) {
            int q = length + c;
            finalState[stateIndex(in, n, d, c)] = q < width
                    ? (in.initialState() == null ? 0f : in.initialState()[stateIndex(in, n, d, q)])
                    : in.x()[(in.segments().start(n) + q - width) * in.channels() + d];
        }
    }

    private static void backpropagateFinalState(ShortConvInputs in, int n, int d, float[] dFinalState,
                                                float[] dx, float[] dinit) {
        int width = in.width();
        int length = in.segments().length(n);
        for (int c = 0; c < width; c++) {
            int q = length + c;
            float g = dFinalState[stateIndex(in, n, d, c)];
            if (q >= width) {
                dx[(in.segments().start(n) + q - width) * in.channels() + d] += g;
            } else if (dinit != null) {
                dinit[stateIndex(in, n, d, q)] += g;
            }
        }
    }

    private static int stateIndex(ShortConvInputs in, int n, int d, int column) {
        return (n * in.channels() + d) * in.width() + column;
    }

    private interface ChannelRange {
        void run(int from, int to);
    }

    private static void forEachChannelBlock(ShortConvInputs in, ChannelRange body) {
        int blocks = (in.channels() + CHANNEL_BLOCK - 1) / CHANNEL_BLOCK;
        IntStream.range(0, blocks).parallel().forEach(b ->
                body.run(b * CHANNEL_BLOCK, Math.min(in.channels(), (b + 1) * CHANNEL_BLOCK)));
    }
}
