package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Split parsing, half-to-even rounding and the epoch rules on hand-computed cases. */
class SplitRangesTest {

    @Test
    void weightsAreParsedPaddedAndNormalised() {
        assertArrayEquals(new double[] {0.969, 0.03, 0.001}, SplitRanges.weights("969,30,1"), 1e-15);
        assertArrayEquals(new double[] {1, 0, 0}, SplitRanges.weights("100"), 0);
        assertArrayEquals(new double[] {0.75, 0.25, 0}, SplitRanges.weights("0.75 / 0.25"), 0);
        assertThrows(IllegalArgumentException.class, () -> SplitRanges.weights("1,2,3,4"));
        assertThrows(IllegalArgumentException.class, () -> SplitRanges.weights("0,0"));
        assertThrows(IllegalArgumentException.class, () -> SplitRanges.weights("train"));
    }

    @Test
    void boundariesRoundHalfToEven() {
        // "1,1" over 5 documents: edge 0.5·5 = 2.5 rounds to 2 (half up would give 3).
        assertEquals(new SplitRanges.DocumentRange(0, 2), SplitRanges.range("1,1", DatasetSplit.TRAIN, 5));
        assertEquals(new SplitRanges.DocumentRange(2, 5), SplitRanges.range("1,1", DatasetSplit.VALID, 5));
        // 3.5 rounds to 4.
        assertEquals(new SplitRanges.DocumentRange(0, 4), SplitRanges.range("1,1", DatasetSplit.TRAIN, 7));
        assertNull(SplitRanges.range("1,1", DatasetSplit.TEST, 5), "a zero-weight part is absent");
    }

    @Test
    void epochPlanRules() {
        // T = 100, L = 10, x = 1: 25 samples need 251 tokens → E = 3; sans = (200−1) div 10 = 19;
        // from final = 6 < trunc(0.8·9) = 7 → separate.
        GptIndexConfig config = new GptIndexConfig(10, 1, "1", DatasetSplit.TRAIN, 25L, true, true);
        assertEquals(new EpochPlan(100, 3, true, 19), EpochPlan.of(100, config));
        // 26 samples: from final 7, not < 7 → one shuffled stream.
        assertEquals(new EpochPlan(100, 3, false, 19),
                EpochPlan.of(100, new GptIndexConfig(10, 1, "1", DatasetSplit.TRAIN, 26L, true, true)));
        assertEquals(1, EpochPlan.of(100, new GptIndexConfig(10, 1, "1", DatasetSplit.TRAIN, null, true, true))
                .numEpochs());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EpochPlan.of(1, config));
        assertTrue(e.getMessage().contains("tokens_per_epoch > 1"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new GptIndexConfig(1, 1, "1", DatasetSplit.TRAIN, null, true,
                true));
    }
}
