package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code bench kda} on a tiny problem: both cases, with either options, run and report what they timed. */
class KdaBenchmarkTest {

    @Test
    void trainingAndStatesCasesRunAndSayWhichTheyAre() {
        for (boolean states : new boolean[] {false, true}) {
            boolean layer = states; // each case once, each options once
            // The layer options at a lower bound of their own; the grouped value heads (HV = 2H) time the per-call
            // preprocessing against itself, a ratio near 1.
            Float lowerBound = layer ? -5f : null;
            Map<String, Object> out = KdaBenchmark.run(new KdaBenchmark.Config(150, 1, 2, 8, 8, 7, states, layer,
                    lowerBound, 1, 0, 1));
            assertEquals(states ? "states" : "training", out.get("case"));
            assertEquals(layer ? "layer" : "plain", out.get("options"));
            assertEquals(layer ? -5f : null, out.get("lower_bound"));
            assertEquals(7, out.get("docs"));
            for (String key : new String[] {"fwd_bwd_ms", "unpacked_fwd_bwd_ms", "packed_over_unpacked",
                    "packed_over_unpacked_cpu", "gflops", "matmul_gflops", "per_call_fwd_bwd_ms",
                    "rows_in_chunks_speedup", "rows_in_chunks_speedup_cpu"}) {
                double value = ((Number) out.get(key)).doubleValue();
                assertTrue(value > 0 && Double.isFinite(value), key + " = " + value);
            }
        }
    }

    /**
     * The state products of the flop count, per case (K = V = 64, one value head; one {@code 64×64×64} product is
     * {@code 2·64³} flops): a chunk entered with a state adds {@code V' = U − WS} and {@code Qg S} to the forward and
     * four products to the backward, one that hands a state on adds the state update ({@code 2·64³ + 64²}) and two
     * products to the backward. A document of one chunk has neither in the training case and both with states; one
     * of two chunks has the end state in its first chunk and the entry state in its second.
     */
    @Test
    void theFlopCountChargesTheStateProductsOnlyWhereTheyAreComputed() {
        double product = 2.0 * 64 * 64 * 64;
        double bothSides = 9 * product + 64 * 64;
        Segments oneChunk = Varlen.fromCuSeqlens(new int[] {0, 64}, 64);
        Segments twoChunks = Varlen.fromCuSeqlens(new int[] {0, 128}, 128);
        double training = KdaBenchmark.chunkedFlops(oneChunk, 1, 64, 64, false, false);
        assertEquals(training + bothSides, KdaBenchmark.chunkedFlops(oneChunk, 1, 64, 64, true, false), 1e-6);
        assertEquals(2 * training + bothSides, KdaBenchmark.chunkedFlops(twoChunks, 1, 64, 64, false, false), 1e-6);
        assertEquals(2 * training + 2 * bothSides, KdaBenchmark.chunkedFlops(twoChunks, 1, 64, 64, true, false),
                1e-6);
        // Recomputing the intermediates charges their work again, the entry state's V' = U − WS with it.
        assertEquals(bothSides + product, KdaBenchmark.chunkedFlops(oneChunk, 1, 64, 64, true, true)
                - KdaBenchmark.chunkedFlops(oneChunk, 1, 64, 64, false, true), 1e-6);
    }

    @Test
    void aLowerBoundWithoutTheLayerOptionsIsRefused() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> new KdaBenchmark.Config(10, 1, 1, 8, 8, 1, false, false, -5f, 1, 0, 1));
        assertEquals("a lower bound (-5.0) needs the layer options", e.getMessage());
    }

    @Test
    void moreDocumentsThanTokensIsRefused() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> new KdaBenchmark.Config(10, 1, 1, 8, 8, 11, false, false, null, 1, 0, 1));
        assertTrue(e.getMessage().contains("docs must be in [1, T = 10], got 11"), e.getMessage());
    }
}
