package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Where each value head has its own q/k head, the chunks prepare their rows from the raw inputs themselves
 * ({@link KdaPreprocess.Rows}) instead of reading head-major tensors prepared once per call. The same operations run
 * on every row and the parameters' sums over tokens take one order in both, so every result is bitwise that of the
 * per-call preprocessing (which the golden and gradient tests check against their references), for each gate, with
 * and without states, with kept or recomputed intermediates and any thread count.
 */
class KdaRowsInChunksTest {

    private static final int[] LENGTHS = {70, 3, 0, 130, 64, 1, 9, 33, 200};

    @Test
    void rowsPreparedInTheChunksGiveTheBitsOfThePerCallPreprocessing() {
        List<KdaOptions> options = List.of(KdaOptions.plain(), KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f),
                KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f),
                new KdaOptions(0.3f, false, KdaOptions.Gate.LOWER_BOUND, -1f, false));
        int seed = 40;
        for (KdaOptions o : options) {
            for (boolean states : new boolean[] {false, true}) {
                RandomKda.Problem p = RandomKda.packed(seed++, LENGTHS, 3, 3, 20, 24, o, states, 0.02);
                String what = o + (states ? " with states" : "");
                assertSameBits(what, p, new KdaChunked(2));
                assertSameBits(what + ", recomputed on 3 threads", p, new KdaChunked(3, 0));
                assertSameBits(what + ", document-aligned", p, new KdaChunked(1).documentAligned());
            }
        }
        RandomKda.Problem lowerBoundWithoutALog = RandomKda.withoutALog(RandomKda.packed(seed, LENGTHS, 2, 2, 64, 64,
                KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f), false, 0));
        assertSameBits("lower bound without A_log", lowerBoundWithoutALog, new KdaChunked(2));
    }

    @Test
    void onlyCallsWithAQkHeadPerValueHeadPrepareRowsInTheChunks() {
        KdaOptions o = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
        KdaChunked backend = new KdaChunked(1);
        assertTrue(backend.preparesRows(RandomKda.packed(1, LENGTHS, 2, 2, 8, 8, o, false, 0).inputs()));
        assertFalse(backend.preparesRows(RandomKda.packed(1, LENGTHS, 2, 6, 8, 8, o, false, 0).inputs()));
        assertFalse(backend.preparedPerCall().preparesRows(RandomKda.packed(1, LENGTHS, 2, 2, 8, 8, o, false, 0)
                .inputs()));
    }

    /** Forward (with final states) and backward of {@code rows} equal those of its per-call twin, bit for bit. */
    private static void assertSameBits(String what, RandomKda.Problem p, KdaChunked rows) {
        KdaChunked perCall = rows.preparedPerCall();
        assertTrue(rows.preparesRows(p.inputs()), what);
        KdaBackend.KdaResult expected = perCall.forward(p.inputs(), p.options());
        KdaBackend.KdaResult actual = rows.forward(p.inputs(), p.options());
        assertArrayEquals(expected.o(), actual.o(), what + ": o");
        assertArrayEquals(expected.ht(), actual.ht(), what + ": ht");
        KdaBackend.KdaGradients e = perCall.backward(p.inputs(), p.options(), p.dO(), p.dHt());
        KdaBackend.KdaGradients a = rows.backward(p.inputs(), p.options(), p.dO(), p.dHt());
        assertArrayEquals(e.dq(), a.dq(), what + ": dq");
        assertArrayEquals(e.dk(), a.dk(), what + ": dk");
        assertArrayEquals(e.dv(), a.dv(), what + ": dv");
        assertArrayEquals(e.dg(), a.dg(), what + ": dg");
        assertArrayEquals(e.dBeta(), a.dBeta(), what + ": dbeta");
        assertArrayEquals(e.dH0(), a.dH0(), what + ": dh0");
        assertArrayEquals(e.dALog(), a.dALog(), what + ": dA_log");
        assertArrayEquals(e.dDtBias(), a.dDtBias(), what + ": ddt_bias");
        if (p.inputs().aLog() != null) {
            assertNotNull(a.dALog(), what + ": dA_log");
        }
    }
}
