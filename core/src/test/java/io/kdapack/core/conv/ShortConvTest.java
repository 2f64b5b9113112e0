package io.kdapack.core.conv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.KdaAssertions;
import io.kdapack.core.kda.Segments;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class ShortConvTest {

    /** Packing must be exact: the same float operations run in the same order, so results are bit-identical. */
    @Test
    void packedEqualsEachDocumentAlone() {
        Random random = new Random(11);
        int channels = 5;
        int width = 4;
        int[] lengths = {3, 0, 1, 9, 4, 2};
        Segments packed = ConvTesting.packed(lengths);
        ShortConvInputs all = randomInputs(random, packed, channels, width, true, true, Activation.SILU);
        float[] dy = ConvTesting.normal(random, packed.tokens() * channels, 1);
        float[] dfs = ConvTesting.normal(random, lengths.length * channels * width, 1);
        ShortConvOutputs out = ShortConv.forward(all);
        ShortConvGradients grads = ShortConv.backward(all, dy, dfs);

        float[] dweightSum = new float[channels * width];
        float[] dbiasSum = new float[channels];
        for (int n = 0; n < lengths.length; n++) {
            int start = packed.start(n);
            int end = packed.end(n);
            int stateSize = channels * width;
            ShortConvInputs alone = new ShortConvInputs(ConvTesting.packed(lengths[n]), channels, width,
                    slice(all.x(), start * channels, end * channels), all.weight(), all.bias(),
                    slice(all.initialState(), n * stateSize, (n + 1) * stateSize), Activation.SILU);
            ShortConvOutputs o = ShortConv.forward(alone);
            ShortConvGradients g = ShortConv.backward(alone, slice(dy, start * channels, end * channels),
                    slice(dfs, n * stateSize, (n + 1) * stateSize));
            assertArrayEquals(o.y(), slice(out.y(), start * channels, end * channels), "y of document " + n);
            assertArrayEquals(o.finalState(), slice(out.finalState(), n * stateSize, (n + 1) * stateSize),
                    "final state of document " + n);
            assertArrayEquals(g.dx(), slice(grads.dx(), start * channels, end * channels), "dx of document " + n);
            assertArrayEquals(g.dinitialState(), slice(grads.dinitialState(), n * stateSize, (n + 1) * stateSize),
                    "dinitial_state of document " + n);
            add(dweightSum, g.dweight());
            add(dbiasSum, g.dbias());
        }
        // Parameter gradients sum over documents: same terms, different summation order (1e-6 is float round-off).
        assertTrue(KdaAssertions.relativeError(grads.dweight(), dweightSum) < 1e-6);
        assertTrue(KdaAssertions.relativeError(grads.dbias(), dbiasSum) < 1e-6);
    }

    @Test
    void paddingGivesZeroOutputAndGradient() {
        Random random = new Random(5);
        int channels = 3;
        // Tokens 0, 5..7 and 12 are padding; documents [1,5) and [8,12).
        Segments segments = new Segments(13, new int[] {1, 8}, new int[] {5, 12});
        ShortConvInputs in = randomInputs(random, segments, channels, 4, true, false, Activation.SILU);
        float[] dy = ConvTesting.normal(random, 13 * channels, 1);
        ShortConvOutputs out = ShortConv.forward(in);
        ShortConvGradients grads = ShortConv.backward(in, dy, null);
        for (int t : new int[] {0, 5, 6, 7, 12}) {
            for (int d = 0; d < channels; d++) {
                assertEquals(0f, out.y()[t * channels + d], "y at padding token " + t);
                assertEquals(0f, grads.dx()[t * channels + d], "dx at padding token " + t);
            }
        }
        // The second document starts from zeros although padding x values precede it.
        float[] x = in.x().clone();
        Arrays.fill(x, 5 * channels, 8 * channels, 100f);
        ShortConvInputs changedPadding = new ShortConvInputs(segments, channels, 4, x, in.weight(), in.bias(), null,
                Activation.SILU);
        assertArrayEquals(out.y(), ShortConv.forward(changedPadding).y());
    }

    @Test
    void finalStateOfShortSequencesIsLeftFilledFromInitialState() {
        // D = 1, W = 3; sequence 0 has one token, sequence 1 none.
        Segments segments = ConvTesting.packed(1, 0);
        float[] init = {1, 2, 3, 4, 5, 6};
        ShortConvInputs in = new ShortConvInputs(segments, 1, 3, new float[] {9}, new float[] {0, 0, 1}, null, init,
                Activation.NONE);
        ShortConvOutputs out = ShortConv.forward(in);
        assertArrayEquals(new float[] {2, 3, 9, 4, 5, 6}, out.finalState());
        assertArrayEquals(new float[] {9}, out.y());
    }

    @Test
    void gradientsMatchCentralDifferences() {
        for (Activation activation : Activation.values()) {
            for (int width : new int[] {1, 2, 4}) {
                checkGradients(activation, width);
            }
        }
    }

    /**
     * 67 channels (a full block of 64 and a partial one) and a sequence of 70 tokens (two token blocks of 64): the
     * channel-blocked sums of the weight and bias gradients (reading initial states too) against central differences,
     * at the channels around the block edge (62 … 66) and the first one, every tap.
     */
    @Test
    void parameterGradientsMatchCentralDifferencesAcrossChannelAndTokenBlocks() {
        Random random = new Random(37);
        int channels = 67;
        int width = 4;
        Segments segments = ConvTesting.packed(70, 2);
        ShortConvInputs in = randomInputs(random, segments, channels, width, true, true, Activation.SILU);
        float[] dy = ConvTesting.normal(random, segments.tokens() * channels, 1);
        ShortConvGradients grads = ShortConv.backward(in, dy, null);
        Function<ShortConvInputs, Double> loss = changed -> dot(ShortConv.forward(changed).y(), dy);
        int[] edgeChannels = {0, 62, 63, 64, 65, 66};
        int[] weightIndices = new int[edgeChannels.length * width];
        for (int c = 0; c < edgeChannels.length; c++) {
            for (int i = 0; i < width; i++) {
                weightIndices[c * width + i] = edgeChannels[c] * width + i;
            }
        }
        assertGradient("dweight", grads.dweight(), in.weight(), weightIndices, in, loss);
        assertGradient("dbias", grads.dbias(), in.bias(), edgeChannels, in, loss);
    }

    /**
     * The parameter gradients are summed in blocks of 64 channels. The convolution is depthwise, so each channel's
     * dweight and dbias must equal those of the same channel run alone, bit for bit (each is the same double sum over
     * the same tokens in the same order, whatever block holds it), for channel counts on either side of a block edge:
     * 1, 63, 64, 65, 127, 128. 63 and 127 are where a block count rounded up one too far adds a block of negative size.
     */
    @Test
    void parameterGradientsOfEachChannelEqualThatChannelAloneAtEveryBlockEdge() {
        int width = 4;
        Segments segments = new Segments(23, new int[] {0, 5, 5, 9}, new int[] {5, 5, 9, 23});
        for (int channels : new int[] {1, 63, 64, 65, 127, 128}) {
            Random random = new Random(41 + channels);
            ShortConvInputs in = randomInputs(random, segments, channels, width, true, true, Activation.SILU);
            float[] dy = ConvTesting.normal(random, segments.tokens() * channels, 1);
            ShortConvGradients all = ShortConv.backward(in, dy, null);
            for (int d = 0; d < channels; d++) {
                float[] x = new float[segments.tokens()];
                float[] dyAlone = new float[segments.tokens()];
                for (int t = 0; t < x.length; t++) {
                    x[t] = in.x()[t * channels + d];
                    dyAlone[t] = dy[t * channels + d];
                }
                float[] initial = new float[segments.count() * width];
                for (int n = 0; n < segments.count(); n++) {
                    System.arraycopy(in.initialState(), (n * channels + d) * width, initial, n * width, width);
                }
                ShortConvInputs alone = new ShortConvInputs(segments, 1, width, x,
                        slice(in.weight(), d * width, (d + 1) * width), slice(in.bias(), d, d + 1), initial,
                        Activation.SILU);
                ShortConvGradients one = ShortConv.backward(alone, dyAlone, null);
                String where = "D=" + channels + " channel " + d;
                assertArrayEquals(one.dweight(), slice(all.dweight(), d * width, (d + 1) * width), where + " dweight");
                assertEquals(one.dbias()[0], all.dbias()[d], where + " dbias");
            }
        }
    }

    private static void checkGradients(Activation activation, int width) {
        Random random = new Random(31 + width);
        int channels = 3;
        Segments segments = new Segments(12, new int[] {0, 2, 3, 3}, new int[] {2, 3, 3, 11});
        ShortConvInputs in = randomInputs(random, segments, channels, width, true, true, activation);
        float[] dy = ConvTesting.normal(random, segments.tokens() * channels, 1);
        float[] dfs = ConvTesting.normal(random, segments.count() * channels * width, 1);
        ShortConvGradients grads = ShortConv.backward(in, dy, dfs);
        Function<ShortConvInputs, Double> loss = changed -> {
            ShortConvOutputs o = ShortConv.forward(changed);
            return dot(o.y(), dy) + dot(o.finalState(), dfs);
        };
        String where = activation + " W=" + width + " ";
        assertGradient(where + "dx", grads.dx(), in.x(), in, loss);
        assertGradient(where + "dweight", grads.dweight(), in.weight(), in, loss);
        assertGradient(where + "dbias", grads.dbias(), in.bias(), in, loss);
        assertGradient(where + "dinitial_state", grads.dinitialState(), in.initialState(), in, loss);
    }

    /**
     * Central differences with step 1e-2 on float32 inputs, loss summed in double: truncation error is
     * O(h²) ≈ 1e-4 relative and float round-off ≈ 1e-7 / h ≈ 1e-5, so 1e-3 relative separates a correct gradient
     * from a wrong one (a wrong term is an O(1) error).
     */
    private static void assertGradient(String name, float[] analytic, float[] parameter, ShortConvInputs in,
                                       Function<ShortConvInputs, Double> loss) {
        assertGradient(name, analytic, parameter, java.util.stream.IntStream.range(0, parameter.length).toArray(), in,
                loss);
    }

    /** As above, at the entries {@code indices} of the parameter only. */
    private static void assertGradient(String name, float[] analytic, float[] parameter, int[] indices,
                                       ShortConvInputs in, Function<ShortConvInputs, Double> loss) {
        float h = 1e-2f;
        float[] numeric = new float[indices.length];
        float[] picked = new float[indices.length];
        for (int k = 0; k < indices.length; k++) {
            int i = indices[k];
            float saved = parameter[i];
            parameter[i] = saved + h;
            double plus = loss.apply(in);
            parameter[i] = saved - h;
            double minus = loss.apply(in);
            parameter[i] = saved;
            numeric[k] = (float) ((plus - minus) / (2 * h));
            picked[k] = analytic[i];
        }
        double err = KdaAssertions.relativeError(picked, numeric);
        assertTrue(err < 1e-3, name + ": relative error " + err + " against finite differences");
    }

    @Test
    void resultsDoNotDependOnThreadCount() throws Exception {
        Random random = new Random(2);
        int channels = 40;
        ShortConvInputs in = randomInputs(random, ConvTesting.packed(50, 7, 80), channels, 4, true, true,
                Activation.SILU);
        float[] dy = ConvTesting.normal(random, in.tokens() * channels, 1);
        ShortConvGradients parallel = ShortConv.backward(in, dy, null);
        ForkJoinPool single = new ForkJoinPool(1);
        try {
            ShortConvGradients serial = single.submit(() -> ShortConv.backward(in, dy, null)).get();
            assertArrayEquals(parallel.dx(), serial.dx());
            assertArrayEquals(parallel.dweight(), serial.dweight());
            assertArrayEquals(parallel.dinitialState(), serial.dinitialState());
        } finally {
            single.shutdown();
        }
    }

    @Test
    void rejectsBadInputsNamingArgumentAndValue() {
        Segments two = ConvTesting.packed(2, 3);
        float[] x = new float[5 * 2];
        float[] w = new float[2 * 4];
        assertMessage("width W must be >= 1, got 0",
                () -> new ShortConvInputs(two, 2, 0, x, new float[0], null, null, Activation.SILU));
        assertMessage("channels D must be >= 1, got 0",
                () -> new ShortConvInputs(two, 0, 4, new float[0], new float[0], null, null, Activation.SILU));
        assertMessage("x has 9 values, expected 10 for shape [T,D] = [5,2]",
                () -> new ShortConvInputs(two, 2, 4, new float[9], w, null, null, Activation.SILU));
        assertMessage("weight has 6 values, expected 8 for shape [D,W] = [2,4]",
                () -> new ShortConvInputs(two, 2, 4, x, new float[6], null, null, Activation.SILU));
        assertMessage("bias has 3 values, expected 2 for shape [D] = [2]",
                () -> new ShortConvInputs(two, 2, 4, x, w, new float[3], null, Activation.SILU));
        assertMessage("initialState has 8 values, expected 16 for shape [N,D,W] = [2,2,4]",
                () -> new ShortConvInputs(two, 2, 4, x, w, null, new float[8], Activation.SILU));
        assertMessage("segment 1 = [1, 5) must satisfy 2 <= start <= end <= tokens = 5",
                () -> new Segments(5, new int[] {0, 1}, new int[] {2, 5}));
        ShortConvInputs ok = new ShortConvInputs(two, 2, 4, x, w, null, null, Activation.SILU);
        assertMessage("dy has 4 values, expected 10 for shape [T,D] = [5,2]",
                () -> ShortConv.backward(ok, new float[4], null));
        assertMessage("dFinalState has 15 values, expected 16 for shape [N,D,W] = [2,2,4]",
                () -> ShortConv.backward(ok, new float[10], new float[15]));
        assertMessage("activation must be \"silu\" or \"none\", got \"relu\"", () -> Activation.parse("relu"));
    }

    private static void assertMessage(String expected, Runnable action) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, action::run);
        assertEquals(expected, e.getMessage());
    }

    private static ShortConvInputs randomInputs(Random random, Segments segments, int channels, int width,
                                                boolean bias, boolean initialState, Activation activation) {
        return new ShortConvInputs(segments, channels, width,
                ConvTesting.normal(random, segments.tokens() * channels, 1),
                ConvTesting.normal(random, channels * width, 1 / Math.sqrt(width)),
                bias ? ConvTesting.normal(random, channels, 1) : null,
                initialState ? ConvTesting.normal(random, segments.count() * channels * width, 1) : null,
                activation);
    }

    private static float[] slice(float[] a, int from, int to) {
        return Arrays.copyOfRange(a, from, to);
    }

    private static void add(float[] sum, float[] a) {
        for (int i = 0; i < a.length; i++) {
            sum[i] += a[i];
        }
    }

    private static double dot(float[] a, float[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += (double) a[i] * b[i];
        }
        return s;
    }
}
