package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The defining property: a packed batch gives the same outputs, final states and gradients as each
 * document run alone, and padding gives zero output and zero gradient. The reference computes each (sequence,
 * head) from its own tokens in the same order whatever the packing, so its per-token results and per-sequence
 * states are bitwise equal. The chunked backend lays its chunks over the packed axis, so where a document starts
 * decides how its tokens fall into chunks and the rounding differs: within 1e-6 relative (float32 round-off is
 * ~6e-8 per operation; a leak of a neighbour document would show at 1e-1; measured: at most 2.5e-7). The gate
 * gradient {@code dg} is a suffix sum of terms that cancel heavily (float32 is already up to 6e-6 from float64 on
 * the golden files): measured up to 2.6e-6 here, so 1e-5 for it. The parameter gradients
 * {@code dA_log}, {@code dt_bias} (sums over documents, in another order) differ by round-off: 1e-6 for the
 * reference, 1e-5 for the chunked backend, whose sums carry the round-off of its dg (measured 3.0e-6).
 */
class KdaPackingTest {

    private static final int[] LENGTHS = {15, 64, 0, 100, 1, 3, 130};

    static Stream<Arguments> backends() {
        return Stream.of(Arguments.of(new KdaChunked(2)), Arguments.of(new KdaRecurrent(2)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void packedBatchEqualsEachDocumentAlone(KdaBackend backend) {
        KdaOptions options = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
        RandomKda.Problem packed = RandomKda.packed(21, LENGTHS, 1, 2, 16, 8, options, true, 0.02);
        KdaInputs in = packed.inputs();
        KdaBackend.KdaResult all = backend.forward(in, options);
        KdaBackend.KdaGradients gradAll = backend.backward(in, options, packed.dO(), packed.dHt());
        float[] dALogSum = new float[in.valueHeads()];
        float[] dDtBiasSum = new float[in.valueHeads() * in.keyDim()];
        for (int n = 0; n < in.sequences(); n++) {
            Slice doc = new Slice(in, n);
            KdaInputs alone = doc.inputs();
            KdaBackend.KdaResult one = backend.forward(alone, options);
            KdaBackend.KdaGradients gradOne = backend.backward(alone, options, doc.tokens(packed.dO(), in.valueDim() * in.valueHeads()),
                    doc.state(packed.dHt()));
            String what = backend.name() + " document " + n + " ";
            Same same = backend instanceof KdaRecurrent ? Same.BITWISE : Same.ROUND_OFF;
            same.check(doc.tokens(all.o(), in.valueHeads() * in.valueDim()), one.o(), what + "o");
            same.check(doc.state(all.ht()), one.ht(), what + "ht");
            same.check(doc.tokens(gradAll.dq(), in.heads() * in.keyDim()), gradOne.dq(), what + "dq");
            same.check(doc.tokens(gradAll.dk(), in.heads() * in.keyDim()), gradOne.dk(), what + "dk");
            same.check(doc.tokens(gradAll.dv(), in.valueHeads() * in.valueDim()), gradOne.dv(), what + "dv");
            same.check(doc.tokens(gradAll.dg(), in.valueHeads() * in.keyDim()), gradOne.dg(), what + "dg");
            same.check(doc.tokens(gradAll.dBeta(), in.valueHeads()), gradOne.dBeta(), what + "dbeta");
            same.check(doc.state(gradAll.dH0()), gradOne.dH0(), what + "dh0");
            for (int i = 0; i < dALogSum.length; i++) {
                dALogSum[i] += gradOne.dALog()[i];
            }
            for (int i = 0; i < dDtBiasSum.length; i++) {
                dDtBiasSum[i] += gradOne.dDtBias()[i];
            }
        }
        // Sums over tokens of the decay gradient: the chunked backend's are as far as its dg (see the class comment).
        double parameterTolerance = backend instanceof KdaRecurrent ? 1e-6 : 1e-5;
        assertClose("dA_log", gradAll.dALog(), dALogSum, parameterTolerance);
        assertClose("ddt_bias", gradAll.dDtBias(), dDtBiasSum, parameterTolerance);
    }

    /**
     * {@link KdaChunked#documentAligned()}, the inference prefill's backend: every document of a packed call gets bit
     * for bit its output and final state alone, whatever is packed beside it (its chunks start at its own first token),
     * and its results are the op's (against the token-by-token reference, 1e-5 as in the golden tests).
     */
    @Test
    void documentAlignedGivesEveryDocumentBitwiseItsResultAlone() {
        KdaOptions options = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
        RandomKda.Problem packed = RandomKda.packed(23, LENGTHS, 1, 2, 16, 8, options, true, 0.02);
        KdaInputs in = packed.inputs();
        KdaChunked aligned = new KdaChunked(2).documentAligned();
        assertEquals(2, aligned.threads(), "as many threads as the backend it came from");
        assertEquals("cpu-chunked", aligned.name());
        KdaBackend.KdaResult all = aligned.forward(in, options);
        KdaBackend.KdaResult reference = new KdaRecurrent(2).forward(in, options);
        assertClose("o", all.o(), reference.o(), 1e-5);
        assertClose("ht", all.ht(), reference.ht(), 1e-5);
        for (int n = 0; n < in.sequences(); n++) {
            Slice doc = new Slice(in, n);
            KdaBackend.KdaResult one = aligned.forward(doc.inputs(), options);
            assertArrayEquals(one.o(), doc.tokens(all.o(), in.valueHeads() * in.valueDim()), "document " + n + " o");
            assertArrayEquals(one.ht(), doc.state(all.ht()), "document " + n + " ht");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void paddingGivesZeroOutputAndZeroGradientAndDoesNotChangeSegments(KdaBackend backend) {
        // [B=2, T=90]: row 0 = id 7 ×40, padding ×10, id 7 ×40 (two segments); row 1 = padding ×5, 2 ×85.
        int rowLength = 90;
        int[] ids = new int[2 * rowLength];
        Arrays.fill(ids, 0, 40, 7);
        Arrays.fill(ids, 50, 90, 7);
        Arrays.fill(ids, rowLength + 5, 2 * rowLength, 2);
        Segments segments = Varlen.fromSegmentIds(ids, 2, rowLength);
        assertEquals(3, segments.count());
        KdaOptions options = KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f);
        RandomKda.Problem p = RandomKda.draw(22, segments, 1, 1, 16, 16, options, false, 0);
        KdaInputs in = p.inputs();
        KdaBackend.KdaResult r = backend.forward(in, options);
        KdaBackend.KdaGradients g = backend.backward(in, options, p.dO(), p.dHt());
        for (int pos = 0; pos < ids.length; pos++) {
            if (ids[pos] != 0) {
                continue;
            }
            for (int i = 0; i < 16; i++) {
                assertEquals(0f, r.o()[pos * 16 + i], "o at padding " + pos);
                assertEquals(0f, g.dq()[pos * 16 + i], "dq at padding " + pos);
                assertEquals(0f, g.dk()[pos * 16 + i], "dk at padding " + pos);
                assertEquals(0f, g.dv()[pos * 16 + i], "dv at padding " + pos);
                assertEquals(0f, g.dg()[pos * 16 + i], "dg at padding " + pos);
            }
            assertEquals(0f, g.dBeta()[pos], "dbeta at padding " + pos);
        }
        Same same = backend instanceof KdaRecurrent ? Same.BITWISE : Same.ROUND_OFF;
        for (int n = 0; n < segments.count(); n++) {
            Slice doc = new Slice(in, n);
            KdaBackend.KdaResult one = backend.forward(doc.inputs(), options);
            same.check(doc.tokens(r.o(), 16), one.o(), "segment " + n + " o");
            same.check(doc.state(r.ht()), one.ht(), "segment " + n + " ht");
        }
    }

    /** How equal a packed result must be to the document's own: bit for bit, or within 1e-6 relative (dg 1e-5). */
    private enum Same {
        BITWISE, ROUND_OFF;

        void check(float[] packed, float[] alone, String what) {
            if (this == BITWISE || packed == null || alone == null) {
                assertArrayEquals(alone, packed, what);
            } else {
                assertClose(what, packed, alone, what.endsWith("dg") ? 1e-5 : 1e-6);
            }
        }
    }

    /** Sequence {@code n} of a problem cut out as a problem of its own. */
    private record Slice(KdaInputs all, int n) {
        int start() {
            return all.segments().start(n);
        }

        int length() {
            return all.segments().length(n);
        }

        float[] tokens(float[] x, int perToken) {
            return Arrays.copyOfRange(x, start() * perToken, (start() + length()) * perToken);
        }

        float[] state(float[] x) {
            if (x == null) {
                return null;
            }
            int size = all.valueHeads() * all.keyDim() * all.valueDim();
            return Arrays.copyOfRange(x, n * size, (n + 1) * size);
        }

        KdaInputs inputs() {
            int hk = all.heads() * all.keyDim();
            int hvk = all.valueHeads() * all.keyDim();
            return new KdaInputs(new Segments(length(), new int[] {0}, new int[] {length()}), all.heads(),
                    all.valueHeads(), all.keyDim(), all.valueDim(), tokens(all.q(), hk), tokens(all.k(), hk),
                    tokens(all.v(), all.valueHeads() * all.valueDim()), tokens(all.g(), hvk),
                    tokens(all.beta(), all.valueHeads()), all.aLog(), all.dtBias(), state(all.h0()));
        }
    }
}
