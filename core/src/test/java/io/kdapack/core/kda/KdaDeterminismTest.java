package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.junit.jupiter.api.Test;

/**
 * Results are bitwise the same for every thread count (disjoint task outputs, fixed-order reductions), and
 * whether the backward keeps the forward intermediates or recomputes them: under grouped value heads (the
 * preprocessing once per call) and with a q/k head per value head (rows prepared in the chunks).
 */
class KdaDeterminismTest {

    @Test
    void chunkedIsBitwiseEqualAcrossThreadCountsUnderGroupedValueHeads() {
        assertBitwiseEqualAcrossThreadCounts(2, 6);
    }

    @Test
    void chunkedIsBitwiseEqualAcrossThreadCountsWithAQkHeadPerValueHead() {
        assertBitwiseEqualAcrossThreadCounts(4, 4);
    }

    private static void assertBitwiseEqualAcrossThreadCounts(int heads, int valueHeads) {
        KdaOptions options = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
        RandomKda.Problem p = RandomKda.packed(31, new int[] {70, 3, 0, 130, 64, 9, 33}, heads, valueHeads, 16, 8,
                options, true, 0);
        KdaBackend.KdaResult ref = new KdaChunked(1).forward(p.inputs(), options);
        KdaBackend.KdaGradients gradRef = new KdaChunked(1).backward(p.inputs(), options, p.dO(), p.dHt());
        for (int threads : new int[] {2, 3, 5}) {
            // Odd thread counts also recompute the forward intermediates in the backward instead of keeping them.
            KdaChunked backend = threads % 2 == 0 ? new KdaChunked(threads) : new KdaChunked(threads, 0);
            KdaBackend.KdaResult r = backend.forward(p.inputs(), options);
            KdaBackend.KdaGradients g = backend.backward(p.inputs(), options, p.dO(), p.dHt());
            String t = threads + " threads ";
            assertArrayEquals(ref.o(), r.o(), t + "o");
            assertArrayEquals(ref.ht(), r.ht(), t + "ht");
            assertArrayEquals(gradRef.dq(), g.dq(), t + "dq");
            assertArrayEquals(gradRef.dk(), g.dk(), t + "dk");
            assertArrayEquals(gradRef.dv(), g.dv(), t + "dv");
            assertArrayEquals(gradRef.dg(), g.dg(), t + "dg");
            assertArrayEquals(gradRef.dBeta(), g.dBeta(), t + "dbeta");
            assertArrayEquals(gradRef.dH0(), g.dH0(), t + "dh0");
            assertArrayEquals(gradRef.dALog(), g.dALog(), t + "dA_log");
            assertArrayEquals(gradRef.dDtBias(), g.dDtBias(), t + "ddt_bias");
        }
    }
}
