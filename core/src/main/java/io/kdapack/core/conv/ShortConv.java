package io.kdapack.core.conv;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.linalg.Team;
import io.kdapack.core.linalg.VectorWidth;
import io.kdapack.core.linalg.Workspace;
import java.util.ArrayList;
import java.util.List;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

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
 * <p>Token-major: every loop runs over the channels of one token row, contiguous, on vectors (the JIT left these
 * loops scalar: the pre-activation alone was 9 % of a KDA layer's time), each lane with the scalar loop's operations,
 * a product rounded before its sum; and the parallel tasks are blocks of {@link #TOKEN_BLOCK} tokens of one sequence.
 * Each output element is computed by one task in a fixed order, and the weight and bias gradients are summed per
 * channel over tokens in token order, so results do not depend on the thread count or the vector width.
 */
public final class ShortConv {
    private static final int TOKEN_BLOCK = 64;
    /** Channels per parallel task when summing the weight and bias gradients over tokens. */
    private static final int CHANNEL_BLOCK = 64;
    private static final VectorSpecies<Float> FLOATS = VectorWidth.SPECIES;
    private static final int LANES = FLOATS.length();
    private static final VectorSpecies<Double> DOUBLES = VectorWidth.DOUBLES;
    private static final VectorSpecies<Float> HALF_FLOATS = VectorWidth.HALF_FLOATS;
    private static final int DOUBLE_LANES = DOUBLES.length();

    private ShortConv() {
    }

    /** This op as a {@link ShortConvBackend}: the CPU implementation. */
    public static final ShortConvBackend CPU = new ShortConvBackend() {
        @Override
        public String name() {
            return "cpu";
        }

        @Override
        public ShortConvOutputs forward(ShortConvInputs in) {
            return ShortConv.forward(in);
        }

        @Override
        public ShortConvGradients backward(ShortConvInputs in, float[] dy, float[] dFinalState) {
            return ShortConv.backward(in, dy, dFinalState);
        }
    };

    /** Outputs {@code y [T,D]} and final states {@code [N,D,W]}. */
    public static ShortConvOutputs forward(ShortConvInputs in) {
        int channels = in.channels();
        float[] y = Workspace.zeros(in.tokens() * channels); // padding rows stay 0
        float[] weightByTap = weightByTap(in);
        forEachTokenBlock(in.segments(), (n, from, to) -> {
            float[] z = new float[channels];
            for (int t = from; t < to; t++) {
                preActivation(in, weightByTap, n, t, z);
                in.activation().apply(z, y, t * channels, channels);
            }
        });
        float[] finalState = new float[in.sequences() * channels * in.width()];
        for (int n = 0; n < in.sequences(); n++) {
            writeFinalState(in, n, finalState);
        }
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
        float[] weightByTap = weightByTap(in);
        Segments seg = in.segments();

        // dz = dy ⊙ act'(z), 0 at padding.
        float[] dz = Workspace.zeros(tokens * channels);
        forEachTokenBlock(seg, (n, from, to) -> {
            float[] z = new float[channels];
            for (int t = from; t < to; t++) {
                preActivation(in, weightByTap, n, t, z);
                in.activation().backward(z, dy, dz, t * channels, channels);
            }
        });

        // dx[p] = Σ_i weight[:,i] ⊙ dz[p + (W−1) − i] over outputs of the same sequence, plus the final state's part.
        float[] dx = Workspace.zeros(tokens * channels);
        forEachTokenBlock(seg, (n, from, to) -> {
            int end = seg.end(n);
            for (int p = from; p < to; p++) {
                int row = p * channels;
                for (int i = 0; i < width; i++) {
                    int t = p + (width - 1) - i;
                    if (t < end) {
                        addProducts(channels, weightByTap, i * channels, dz, t * channels, dx, row);
                    }
                }
                int column = p - end + width; // ext index L + c = p − s + W  ⇒  c = p − end + W
                if (dFinalState != null && column >= 0) {
                    for (int d = 0; d < channels; d++) {
                        dx[row + d] += dFinalState[(n * channels + d) * width + column];
                    }
                }
            }
        });

        float[] dinit = in.initialState() == null ? null : initialStateGradient(in, dz, dFinalState);
        float[] dweight = new float[channels * width];
        float[] dbias = in.bias() == null ? null : new float[channels];
        sumParameterGradients(in, dz, dweight, dbias);
        return new ShortConvGradients(dx, dweight, dbias, dinit);
    }

    /**
     * {@code dinit[n,d,W−j] = Σ_i weight[d,i] · dz[s − j + (W−1) − i, d]} over outputs inside the sequence, plus
     * {@code dFinalState[n,d,c]} where column {@code L + c} of {@code ext} is still initial state.
     */
    private static float[] initialStateGradient(ShortConvInputs in, float[] dz, float[] dFinalState) {
        int channels = in.channels();
        int width = in.width();
        Segments seg = in.segments();
        float[] dinit = new float[in.initialState().length];
        Team.forEach(seg.count(), n -> {
            int start = seg.start(n);
            for (int j = 1; j < width; j++) {
                for (int i = 0; i < width; i++) {
                    int t = start - j + (width - 1) - i;
                    if (t >= start && t < seg.end(n)) {
                        for (int d = 0; d < channels; d++) {
                            dinit[(n * channels + d) * width + width - j] += in.weight()[d * width + i]
                                    * dz[t * channels + d];
                        }
                    }
                }
            }
            if (dFinalState != null) {
                for (int c = 0; seg.length(n) + c < width; c++) {
                    for (int d = 0; d < channels; d++) {
                        int index = (n * channels + d) * width;
                        dinit[index + seg.length(n) + c] += dFinalState[index + c];
                    }
                }
            }
        });
        return dinit;
    }

    /** {@code dweight[d,i] = Σ_t dz[t,d] · in(t−(W−1)+i, d)}, {@code dbias[d] = Σ_t dz[t,d]}, summed in double. */
    private static void sumParameterGradients(ShortConvInputs in, float[] dz, float[] dweight, float[] dbias) {
        int channels = in.channels();
        int width = in.width();
        Segments seg = in.segments();
        int blocks = (channels + CHANNEL_BLOCK - 1) / CHANNEL_BLOCK;
        Team.forEach(blocks, b -> {
            int d0 = b * CHANNEL_BLOCK;
            int size = Math.min(channels, d0 + CHANNEL_BLOCK) - d0;
            double[] weightSums = new double[width * size];
            double[] biasSums = new double[size];
            float[] inputs = new float[size];
            for (int n = 0; n < seg.count(); n++) {
                for (int t = seg.start(n); t < seg.end(n); t++) {
                    int row = t * channels + d0;
                    addInDouble(size, dz, row, biasSums);
                    for (int i = 0; i < width; i++) {
                        readInputs(in, n, t - (width - 1) + i, d0, size, inputs);
                        addProductsInDouble(size, dz, row, inputs, weightSums, i * size);
                    }
                }
            }
            for (int dd = 0; dd < size; dd++) {
                for (int i = 0; i < width; i++) {
                    dweight[(d0 + dd) * width + i] = (float) weightSums[i * size + dd];
                }
                if (dbias != null) {
                    dbias[d0 + dd] = (float) biasSums[dd];
                }
            }
        });
    }

    /** {@code z[d] = bias[d] + Σ_i weight[d,i] · in(t−(W−1)+i, d)} for all channels of token t of sequence n. */
    private static void preActivation(ShortConvInputs in, float[] weightByTap, int n, int t, float[] z) {
        int channels = in.channels();
        int width = in.width();
        int start = in.segments().start(n);
        if (in.bias() == null) {
            java.util.Arrays.fill(z, 0f);
        } else {
            System.arraycopy(in.bias(), 0, z, 0, channels);
        }
        for (int i = 0; i < width; i++) {
            int p = t - (width - 1) + i;
            int tap = i * channels;
            if (p >= start) {
                addProducts(channels, weightByTap, tap, in.x(), p * channels, z, 0);
            } else if (in.initialState() != null) {
                int column = width - (start - p);
                for (int d = 0; d < channels; d++) {
                    z[d] += weightByTap[tap + d] * in.initialState()[(n * channels + d) * width + column];
                }
            }
        }
    }

    /** {@code out[i] += w[i] · x[i]} for {@code i < n}: the product rounded to float, then added (not fused). */
    private static void addProducts(int n, float[] w, int wOff, float[] x, int xOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = FLOATS.loopBound(n); i < bound; i += LANES) {
            FloatVector product = FloatVector.fromArray(FLOATS, w, wOff + i)
                    .mul(FloatVector.fromArray(FLOATS, x, xOff + i));
            FloatVector.fromArray(FLOATS, out, outOff + i).add(product).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] += w[wOff + i] * x[xOff + i];
        }
    }

    /** {@code sums[i] += x[xOff + i]} in double, for {@code i < n}. */
    private static void addInDouble(int n, float[] x, int xOff, double[] sums) {
        int i = 0;
        for (int bound = HALF_FLOATS.loopBound(n); i < bound; i += DOUBLE_LANES) {
            DoubleVector.fromArray(DOUBLES, sums, i).add(VectorWidth.toDoubles(x, xOff + i)).intoArray(sums, i);
        }
        for (; i < n; i++) {
            sums[i] += x[xOff + i];
        }
    }

    /** {@code sums[sOff + i] += (double) x[xOff + i] · y[i]}, the product in double, for {@code i < n}. */
    private static void addProductsInDouble(int n, float[] x, int xOff, float[] y, double[] sums, int sOff) {
        int i = 0;
        for (int bound = HALF_FLOATS.loopBound(n); i < bound; i += DOUBLE_LANES) {
            DoubleVector product = VectorWidth.toDoubles(x, xOff + i).mul(VectorWidth.toDoubles(y, i));
            DoubleVector.fromArray(DOUBLES, sums, sOff + i).add(product).intoArray(sums, sOff + i);
        }
        for (; i < n; i++) {
            sums[sOff + i] += (double) x[xOff + i] * y[i];
        }
    }

    /** {@code out[dd] = in(p, d0 + dd)} for {@code dd < size}: x, or the initial state (or 0) before the start. */
    private static void readInputs(ShortConvInputs in, int n, int p, int d0, int size, float[] out) {
        int channels = in.channels();
        int start = in.segments().start(n);
        if (p >= start) {
            System.arraycopy(in.x(), p * channels + d0, out, 0, size);
        } else if (in.initialState() == null) {
            java.util.Arrays.fill(out, 0, size, 0f);
        } else {
            int column = in.width() - (start - p);
            for (int dd = 0; dd < size; dd++) {
                out[dd] = in.initialState()[(n * channels + d0 + dd) * in.width() + column];
            }
        }
    }

    /** Column c of the final state is {@code ext[L + c]}: initial-state column L+c, or input s+L+c−W. */
    private static void writeFinalState(ShortConvInputs in, int n, float[] finalState) {
        int channels = in.channels();
        int width = in.width();
        int length = in.segments().length(n);
        for (int d = 0; d < channels; d++) {
            int index = (n * channels + d) * width;
            for (int c = 0; c < width; c++) {
                int q = length + c;
                finalState[index + c] = q < width
                        ? (in.initialState() == null ? 0f : in.initialState()[index + q])
                        : in.x()[(in.segments().start(n) + q - width) * channels + d];
            }
        }
    }

    /** {@code weight [D,W]} transposed to {@code [W,D]}, so that each tap is a contiguous row over channels. */
    private static float[] weightByTap(ShortConvInputs in) {
        int channels = in.channels();
        int width = in.width();
        float[] byTap = new float[width * channels];
        for (int d = 0; d < channels; d++) {
            for (int i = 0; i < width; i++) {
                byTap[i * channels + d] = in.weight()[d * width + i];
            }
        }
        return byTap;
    }

    private interface TokenBlockBody {
        void run(int sequence, int from, int to);
    }

    /** Runs {@code body} on blocks of at most {@link #TOKEN_BLOCK} tokens of each sequence, in parallel. */
    private static void forEachTokenBlock(Segments seg, TokenBlockBody body) {
        List<int[]> blocks = new ArrayList<>();
        for (int n = 0; n < seg.count(); n++) {
            for (int from = seg.start(n); from < seg.end(n); from += TOKEN_BLOCK) {
                blocks.add(new int[] {n, from, Math.min(seg.end(n), from + TOKEN_BLOCK)});
            }
        }
        Team.forEach(blocks.size(), i -> {
            int[] b = blocks.get(i);
            body.run(b[0], b[1], b[2]);
        });
    }
}
