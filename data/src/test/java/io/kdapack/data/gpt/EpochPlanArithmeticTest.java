package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The edges of Megatron's epoch and sample-count arithmetic that the golden cases never reach (PIT survivors, issue
 * 17). Expected values follow Megatron's formulas in {@code GPTDataset} by hand: {@code _get_num_epochs} (the
 * smallest E with {@code E·T >= N·L + x}), {@code num_samples = (E·T − x) // L} when the last partial sample is dropped,
 * else {@code ceil((E·T − x) / L)}; {@code num_samples_sans_final_epoch = ((E−1)·T − x) // L},
 * {@code num_samples_per_epoch = (T − x) // L} and its assertion {@code from_final <= per_epoch + 1}.
 */
class EpochPlanArithmeticTest {

    private static GptIndexConfig config(int seqLength, Long numSamples, boolean extraToken) {
        return new GptIndexConfig(seqLength, 1234, "1,0,0", DatasetSplit.TRAIN, numSamples, extraToken, true);
    }

    @Test
    void anExactMultipleOfTheEpochNeedsNoFurtherEpoch() {
        // N·L + x = 6·4 + 0 = 24 = 2·T: Megatron stops at E = 2 (24 >= 24); a ceiling one off would give 3.
        EpochPlan plan = EpochPlan.of(12, config(4, 6L, false));
        assertEquals(2, plan.numEpochs());
        // sans = (1·12 − 0) // 4 = 3; from_final = 3 < int(0.8·3) = 2 is false: no separate final epoch.
        assertEquals(3, plan.samplesSansFinalEpoch());
        assertFalse(plan.separateFinalEpoch());
        // One token more in the request (x = 1): 25 > 24, so E = 3.
        assertEquals(3, EpochPlan.of(12, config(4, 6L, true)).numEpochs());
    }

    @Test
    void theFinalEpochMayGiveOneSampleMoreThanAnEpochHolds() {
        // T = 3, L = 2, x = 0, N = 3: E = 2 (6 >= 6), sans = 3 // 2 = 1, from_final = 2, per_epoch = 3 // 2 = 1:
        // from_final = per_epoch + 1 is the largest Megatron's assertion allows, and it is reached.
        EpochPlan plan = EpochPlan.of(3, config(2, 3L, false));
        assertEquals(2, plan.numEpochs());
        assertEquals(1, plan.samplesSansFinalEpoch());
        assertFalse(plan.separateFinalEpoch(), "2 < int(0.8·1) = 0 is false");
        // The separate-epoch threshold: T = 10, L = 2, x = 0, per_epoch = 5, int(0.8·5) = 4. N = 8: E = 2 (16 <= 20),
        // sans = 5, from_final = 3 < 4: separate. N = 9: from_final = 4, not < 4: not separate.
        assertTrue(EpochPlan.of(10, config(2, 8L, false)).separateFinalEpoch());
        assertFalse(EpochPlan.of(10, config(2, 9L, false)).separateFinalEpoch());
    }

    @Test
    void theMostEpochsAnInt32IndexCanCountAreAllowedAndOneMoreIsAnError() {
        // T = 2, L = 2, x = 0: E = N exactly (2N >= 2N), so N = 2^31 − 1 needs exactly Integer.MAX_VALUE epochs.
        EpochPlan plan = EpochPlan.of(2, config(2, (long) Integer.MAX_VALUE, false));
        assertEquals(Integer.MAX_VALUE, plan.numEpochs());
        assertEquals(Integer.MAX_VALUE - 1L, plan.samplesSansFinalEpoch());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EpochPlan.of(2, config(2, Integer.MAX_VALUE + 1L, false)));
        assertEquals("numSamples 2147483648 needs 2147483648 epochs", e.getMessage());
    }

    @Test
    void theConfigAcceptsEachEdgeOfItsRangesAndRefusesOnePast() {
        // Megatron asserts seq_length > 1; numpy's RandomState takes seeds in [0, 2^32 − 1]; num_samples >= 0.
        new GptIndexConfig(2, 0, "1,0,0", DatasetSplit.TRAIN, 0L, false, true);
        new GptIndexConfig(2, 0xFFFFFFFFL, "1,0,0", DatasetSplit.TRAIN, null, false, true);
        assertEquals("seqLength must be at least 2 (Megatron asserts seq_length > 1), got 1",
                assertThrows(IllegalArgumentException.class,
                        () -> new GptIndexConfig(1, 0, "1,0,0", DatasetSplit.TRAIN, null, false, true)).getMessage());
        assertEquals("randomSeed must be in [0, 2^32), got -1", assertThrows(IllegalArgumentException.class,
                () -> new GptIndexConfig(2, -1, "1,0,0", DatasetSplit.TRAIN, null, false, true)).getMessage());
        assertEquals("randomSeed must be in [0, 2^32), got 4294967296", assertThrows(IllegalArgumentException.class,
                () -> new GptIndexConfig(2, 1L << 32, "1,0,0", DatasetSplit.TRAIN, null, false, true)).getMessage());
        assertEquals("numSamples must be >= 0, got -1", assertThrows(IllegalArgumentException.class,
                () -> new GptIndexConfig(2, 0, "1,0,0", DatasetSplit.TRAIN, -1L, false, true)).getMessage());
    }

    /** Three documents of four tokens each: T = 12, a multiple of L = 4, where {@code − x} and {@code + x} part. */
    private static IndexedDataset twelveTokens(Path dir) throws IOException {
        Path prefix = dir.resolve("docs");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.forVocabulary(20))) {
            builder.addDocument(new int[] {1, 2, 3, 4});
            builder.addDocument(new int[] {5, 6, 7, 8});
            builder.addDocument(new int[] {9, 10, 11, 12});
            builder.finish();
        }
        return IndexedDataset.open(prefix);
    }

    @Test
    void theExtraTokenShortensTheStreamByOneWhenSamplesAreCounted(@TempDir Path dir) throws IOException {
        IndexedDataset dataset = twelveTokens(dir);
        // Dropped last partial sample: (12 − 1) // 4 = 2 samples ((12 + 1) // 4 would be 3); without x, 12 // 4 = 3.
        assertEquals(2, GptIndices.build(dataset, config(4, null, true)).sampleCount());
        assertEquals(3, GptIndices.build(dataset, config(4, null, false)).sampleCount());
        // Megatron's build_sample_idx for the two samples of L + x = 5 tokens: each starts x = 1 token before the
        // previous one's end, so (position, offset) rows (0, 0), (1, 0), (2, 0) over equal-length documents.
        assertArrayEquals(new int[] {0, 0, 1, 0, 2, 0}, GptIndices.build(dataset, config(4, null, true)).sampleIndex());
        // Valid part keeping the last partial sample: ceil((12 − 1) / 4) = 3 ((12 + 1) / 4 would give 4).
        GptIndexConfig valid = new GptIndexConfig(4, 1234, "0,1,0", DatasetSplit.VALID, null, true, false);
        GptIndices indices = GptIndices.build(dataset, valid);
        assertEquals(3, indices.sampleCount());
        // The third sample runs out of documents and ends x tokens before the last document's end: (2, 4 − 1).
        assertArrayEquals(new int[] {0, 0, 1, 0, 2, 0, 2, 3}, indices.sampleIndex());
    }

    @Test
    void indicesOfZeroSamplesHoldOneRowAndMisShapedOnesAreRefused() {
        // Megatron's sample_index has S + 1 rows of two; S = 0 is one row and an empty shuffle_index.
        assertEquals(0, new GptIndices(new int[] {0}, new int[] {0, 0}, new int[0]).sampleCount());
        assertEquals("sampleIndex must hold S+1 >= 1 rows of 2, has 1 values", assertThrows(IllegalArgumentException.class,
                () -> new GptIndices(new int[] {0}, new int[] {0}, new int[0])).getMessage());
        assertEquals("shuffleIndex has 2 entries, expected S = 1 (sampleIndex rows − 1)",
                assertThrows(IllegalArgumentException.class,
                        () -> new GptIndices(new int[] {0}, new int[] {0, 0, 0, 1}, new int[] {0, 0})).getMessage());
    }
}
