package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link PairwiseDecay} against its definition in double, {@code M[r,c] = Σ_d x_r y_c exp(Γ_r − Γ_c)} over the
 * pairs of one document, and the gradients of it, for gates that take each of its paths: the whole chunk factored
 * from its start (mild gates, and gates whose sums over the chunk come within a few units of the range's −64), blocks
 * of 32 factored whole (gates of −1.5 to −2.5, whose sums leave the range within the chunk), blocks of 16 or 8 (gates
 * near −5, a lower-bound gate's floor), diagonal blocks formed pair by pair (gates of −10 to −40, where every decay
 * leaves the exponential's range within a few rows and the pairs past it are skipped), and hard resets of −1000 in
 * one key element. Tolerances: 1e-5 relative for the products and the
 * gradients of q and k; float against double lands near 1e-7, and a dropped or doubled pair, block or factor moves
 * the result by far more. The gate's gradient sums terms that cancel (each pair adds its term to row r and takes it
 * from column c; the diagonal pairs cancel exactly in the definition and to rounding in float), so its error is
 * measured against the size of the terms, {@code ‖got − expected‖ ≤ 1e-5 · ‖Σ |terms|‖}.
 */
class PairwiseDecayTest {

    private static final int K = 16;

    static Stream<Arguments> gates() {
        return Stream.of(
                Arguments.of("mild gates: the whole chunk", (GateDraw) rnd -> -0.1 * rnd.nextDouble()),
                Arguments.of("gates summing to nearly -64: the whole chunk",
                        (GateDraw) rnd -> -0.9 - 0.09 * rnd.nextDouble()),
                Arguments.of("gates of -1.5 to -2.5: whole blocks", (GateDraw) rnd -> -1.5 - rnd.nextDouble()),
                Arguments.of("gates near -5: shorter blocks", (GateDraw) rnd -> -1 - 4 * rnd.nextDouble()),
                Arguments.of("gates of -10 to -40: pair by pair", (GateDraw) rnd -> -10 - 30 * rnd.nextDouble()),
                Arguments.of("hard resets in one key element", (GateDraw) rnd -> -0.05 * rnd.nextDouble()));
    }

    /** A gate value drawn for one row and key element. */
    @FunctionalInterface
    interface GateDraw {
        double draw(Random rnd);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("gates")
    void pairProductsAndTheirGradientsMatchTheDefinition(String name, GateDraw draw) {
        for (int len : new int[] {64, 50}) {
            for (int[] docStarts : new int[][] {{0}, {0, 5, 6, 40}}) {
                check(name + ", len " + len + ", " + docStarts.length + " documents", len, docStarts, draw,
                        name.startsWith("hard"));
            }
        }
    }

    private static void check(String what, int len, int[] docStarts, GateDraw draw, boolean hardResets) {
        Random rnd = new Random(what.hashCode());
        int first = 3; // the chunk's rows start at row 3 of the arrays
        int rows = first + len;
        float[] q = normal(rnd, rows * K);
        float[] k = normal(rnd, rows * K);
        float[] g = new float[rows * K];
        for (int i = 0; i < g.length; i++) {
            g[i] = (float) draw.draw(rnd);
        }
        if (hardResets) {
            for (int r = first; r < rows; r += 7) {
                g[r * K + 5] = -1000f;
            }
        }
        int[] cuSeqlens = Arrays.copyOf(docStarts, docStarts.length + 1);
        cuSeqlens[docStarts.length] = len;
        KdaChunk.Documents docs = new KdaChunk.Documents();
        docs.layOut(Varlen.fromCuSeqlens(cuSeqlens, len), 0, docStarts.length, 0, len);
        int[] rowStart = docs.rowStart;
        int size = KdaChunk.SIZE;
        float[] aQK = new float[size * size];
        float[] pKK = new float[size * size];
        PairwiseDecay pairs = new PairwiseDecay(K);
        PairwiseDecay.Rows decayed = decayedRows(q, k, g, first, len, rowStart);
        pairs.forward(q, k, g, first, len, docs, decayed, aQK, pKK);

        float[] dAQK = new float[size * size];
        float[] dP = new float[size * size];
        double[] expectedAQK = new double[size * size];
        double[] expectedP = new double[size * size];
        float[] gotAQK = new float[size * size];
        float[] gotP = new float[size * size];
        double[] dq = new double[rows * K];
        double[] dk = new double[rows * K];
        double[] dGamma = new double[len * K];
        double[] dGammaTerms = new double[len * K];
        for (int r = 0; r < len; r++) {
            for (int c = rowStart[r]; c <= r; c++) {
                int at = r * size + c;
                dAQK[at] = (float) rnd.nextGaussian();
                dP[at] = c < r ? (float) rnd.nextGaussian() : 0f;
                gotAQK[at] = aQK[at];
                gotP[at] = c < r ? pKK[at] : 0f;
                for (int d = 0; d < K; d++) {
                    double decaySum = 0;
                    for (int t = c + 1; t <= r; t++) {
                        decaySum += g[(first + t) * K + d];
                    }
                    double e = Math.exp(decaySum);
                    double qr = q[(first + r) * K + d];
                    double kr = k[(first + r) * K + d];
                    double kc = k[(first + c) * K + d];
                    expectedAQK[at] += qr * kc * e;
                    if (c < r) {
                        expectedP[at] += kr * kc * e;
                    }
                    // M = x_r · y_c · e: dx_r += dM y_c e, dy_c += dM x_r e, dΓ_r += dM x_r y_c e, dΓ_c −= the same.
                    double term = dAQK[at] * qr * kc * e + dP[at] * kr * kc * e;
                    dq[(first + r) * K + d] += dAQK[at] * kc * e;
                    dk[(first + r) * K + d] += dP[at] * kc * e;
                    dk[(first + c) * K + d] += (dAQK[at] * qr + dP[at] * kr) * e;
                    dGamma[r * K + d] += term;
                    dGamma[c * K + d] -= term;
                    dGammaTerms[r * K + d] += Math.abs(term);
                    dGammaTerms[c * K + d] += Math.abs(term);
                }
            }
        }
        assertClose(what + ": Aqk", gotAQK, expectedAQK, 1e-5);
        assertClose(what + ": P", gotP, expectedP, 1e-5);

        float[] gotDq = new float[rows * K];
        float[] gotDk = new float[rows * K];
        float[] gotDGamma = new float[len * K];
        pairs.backward(q, k, g, first, len, docs, decayed, dAQK, dP, gotDq, gotDk, gotDGamma);
        assertClose(what + ": dq", gotDq, dq, 1e-5);
        assertClose(what + ": dk", gotDk, dk, 1e-5);
        double error = 0;
        double terms = 0;
        for (int i = 0; i < dGamma.length; i++) {
            error += (gotDGamma[i] - dGamma[i]) * (gotDGamma[i] - dGamma[i]);
            terms += dGammaTerms[i] * dGammaTerms[i];
        }
        assertTrue(Math.sqrt(error) <= 1e-5 * Math.sqrt(terms), what + ": dGamma error " + Math.sqrt(error)
                + " against terms of " + Math.sqrt(terms));
    }

    /**
     * The rows {@link KdaChunk} hands the pair products: {@code exp(Γ)} of the gate cumsum restarted at each
     * document's first row, and q and k times it, by the same float operations.
     */
    private static PairwiseDecay.Rows decayedRows(float[] q, float[] k, float[] g, int first, int len,
                                                  int[] rowStart) {
        float[] prefix = new float[len * K];
        float[] qg = new float[len * K];
        float[] kg = new float[len * K];
        float[] sum = new float[K];
        for (int r = 0; r < len; r++) {
            for (int d = 0; d < K; d++) {
                sum[d] = (rowStart[r] == r ? 0f : sum[d]) + g[(first + r) * K + d];
                int at = r * K + d;
                prefix[at] = ChunkMath.exp(sum[d]);
                qg[at] = q[(first + r) * K + d] * prefix[at];
                kg[at] = k[(first + r) * K + d] * prefix[at];
            }
        }
        return new PairwiseDecay.Rows(prefix, qg, kg);
    }

    private static float[] normal(Random rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }
}
