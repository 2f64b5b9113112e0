package io.kdapack.core.kda;

import static io.kdapack.core.kda.VarlenTest.assertMessage;

import org.junit.jupiter.api.Test;

/** Every validation rule of {@link KdaInputs#validate} and {@link KdaOptions}, through a backend. */
class KdaValidationTest {

    private static final Segments TWO_DOCS = Varlen.fromCuSeqlens(new int[] {0, 2, 3}, 3);
    private static final KdaOptions SOFTPLUS = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);

    /** T=3, N=2, H=1, HV=2, K=2, V=3. */
    private static KdaInputs inputs(int heads, int valueHeads, float[] q, float[] aLog, float[] dtBias, float[] h0) {
        return new KdaInputs(TWO_DOCS, heads, valueHeads, 2, 3, q, new float[6], new float[18], new float[12],
                new float[6], aLog, dtBias, h0);
    }

    private static void forward(KdaInputs in, KdaOptions options) {
        new KdaChunked(1).forward(in, options);
    }

    @Test
    void shapesAreCheckedAgainstTheDimensions() {
        assertMessage("q has 5 values, expected [T,H,K] = 6 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                () -> forward(inputs(1, 2, new float[5], null, null, null), KdaOptions.plain()));
        assertMessage("q must not be null (expected [T,H,K] = 6 values)",
                () -> forward(inputs(1, 2, null, null, null, null), KdaOptions.plain()));
        assertMessage("h0 has 3 values, expected [N,HV,K,V] = 24 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                () -> forward(inputs(1, 2, new float[6], null, null, new float[3]), KdaOptions.plain()));
    }

    @Test
    void valueHeadsMustBeAMultipleOfHeads() {
        assertMessage("valueHeads (HV) = 3 must be a multiple of heads (H) = 2",
                () -> forward(new KdaInputs(TWO_DOCS, 2, 3, 2, 3, new float[12], new float[12], new float[27],
                        new float[18], new float[9], null, null, null), KdaOptions.plain()));
    }

    @Test
    void dimensionsMustBePositive() {
        assertMessage("keyDim (K) must be >= 1, got 0", () -> forward(new KdaInputs(TWO_DOCS, 1, 1, 0, 3, new float[0],
                new float[0], new float[9], new float[0], new float[3], null, null, null), KdaOptions.plain()));
        assertMessage("heads (H) must be >= 1, got 0", () -> forward(inputs(0, 2, new float[6], null, null, null),
                KdaOptions.plain()));
    }

    /**
     * Without a gate in the op, g is the log-space decay: a positive or NaN entry of a segment token is refused
     * (the chunks' exponentials assume exponents ≤ 0), one of a padding token is never read and is not.
     */
    @Test
    void aLogSpaceDecayMustNotBePositive() {
        int[] ids = new int[40]; // tokens 0, 1: document 1, token 2: document 2, tokens 3 … 39 padding
        ids[0] = 1;
        ids[1] = 1;
        ids[2] = 2;
        Segments padded = Varlen.fromSegmentIds(ids, 1, 40);
        float[] g = new float[40 * 2 * 2];
        java.util.Arrays.fill(g, -0.5f);
        g[39 * 4 + 3] = 7f;
        g[3 * 4] = Float.NaN;
        KdaInputs in = new KdaInputs(padded, 1, 2, 2, 3, new float[80], new float[80], new float[240], g,
                new float[80], null, null, null);
        forward(in, KdaOptions.plain());
        g[2 * 4 + 3] = 0.25f;
        assertMessage("g[11] = 0.25 (token 2, value head 1, key element 1): without a gate in the op (gate = NONE) g "
                + "is the log-space decay and must be <= 0", () -> forward(in, KdaOptions.plain()));
        g[2 * 4 + 3] = Float.NaN;
        assertMessage("g[11] = NaN (token 2, value head 1, key element 1): without a gate in the op (gate = NONE) g "
                + "is the log-space decay and must be <= 0", () -> forward(in, KdaOptions.plain()));
        g[2 * 4 + 3] = 0f;
        forward(in, KdaOptions.plain());
        // One long document: the positive entry lies in a whole vector of any width.
        KdaInputs whole = new KdaInputs(Varlen.fromCuSeqlens(new int[] {0, 40}, 40), 1, 2, 2, 3, new float[80],
                new float[80], new float[240], g, new float[80], null, null, null);
        g[3 * 4] = -1f;
        g[39 * 4 + 3] = -1f;
        g[37 * 4 + 2] = 1e-30f;
        assertMessage("g[150] = 1.0E-30 (token 37, value head 1, key element 0): without a gate in the op (gate = "
                + "NONE) g is the log-space decay and must be <= 0", () -> forward(whole, KdaOptions.plain()));
        g[37 * 4 + 2] = Float.NaN; // inside a whole vector too: the vector pass must not let NaN through
        assertMessage("g[150] = NaN (token 37, value head 1, key element 0): without a gate in the op (gate = "
                + "NONE) g is the log-space decay and must be <= 0", () -> forward(whole, KdaOptions.plain()));
        // With a gate in the op, g is its raw input, of any sign.
        g[2 * 4 + 3] = 3f;
        forward(new KdaInputs(padded, 1, 2, 2, 3, new float[80], new float[80], new float[240], g, new float[80],
                new float[2], new float[4], null), SOFTPLUS);
    }

    @Test
    void gateParametersArePresentExactlyWhenRequired() {
        assertMessage("dtBias must not be null (expected [HV*K] = 4 values)",
                () -> forward(inputs(1, 2, new float[6], new float[2], null, null), SOFTPLUS));
        assertMessage("aLog must not be null (expected [HV] = 2 values)",
                () -> forward(inputs(1, 2, new float[6], null, new float[4], null), SOFTPLUS));
        assertMessage("aLog has 3 values, expected [HV] = 2 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                () -> forward(inputs(1, 2, new float[6], new float[3], new float[4], null),
                        KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f)));
        assertMessage("dtBias must be null without a gate in the op (gate = NONE), got 4 values",
                () -> forward(inputs(1, 2, new float[6], null, new float[4], null), KdaOptions.plain()));
        assertMessage("aLog must be null without a gate in the op (gate = NONE), got 2 values",
                () -> forward(inputs(1, 2, new float[6], new float[2], null, null), KdaOptions.plain()));
    }

    @Test
    void upstreamGradientsAreChecked() {
        KdaInputs in = inputs(1, 2, new float[6], null, null, null);
        assertMessage("dO has 17 values, expected [T,HV,V] = 18 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                () -> new KdaRecurrent(1).backward(in, KdaOptions.plain(), new float[17], null));
        assertMessage("dHt has 1 values, expected [N,HV,K,V] = 24 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                () -> new KdaRecurrent(1).backward(in, KdaOptions.plain(), new float[18], new float[1]));
    }

    /**
     * The training pair checks the upstream gradients too: a backward through a tape with a dO one value too long
     * (which would otherwise be read short, silently) or a dHt too short is refused by name, on both backends.
     */
    @Test
    void upstreamGradientsThroughATapeAreChecked() {
        KdaInputs in = inputs(1, 2, new float[6], null, null, null);
        for (KdaBackend backend : new KdaBackend[] {new KdaChunked(1), new KdaRecurrent(1)}) {
            assertMessage("dO has 19 values, expected [T,HV,V] = 18 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                    () -> backend.backward(backend.forwardForBackward(in, KdaOptions.plain()), new float[19], null));
            assertMessage("dHt has 1 values, expected [N,HV,K,V] = 24 (T=3, N=2, H=1, HV=2, K=2, V=3)",
                    () -> backend.backward(backend.forwardForBackward(in, KdaOptions.plain()), new float[18],
                            new float[1]));
        }
    }

    @Test
    void optionsAreChecked() {
        assertMessage("lowerBound must be in [-5, 0), got 0.5",
                () -> new KdaOptions(Float.NaN, false, KdaOptions.Gate.LOWER_BOUND, 0.5f, false));
        assertMessage("scale must be a finite number > 0 (or NaN for K^-0.5), got -1.0",
                () -> new KdaOptions(-1f, false, KdaOptions.Gate.NONE, 0f, false));
        assertMessage("threads must be >= 1, got 0", () -> new KdaChunked(0));
    }
}
