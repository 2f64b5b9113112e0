package io.kdapack.data.segment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.Segments;
import io.kdapack.data.GoldenFiles;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Segment ids, segments, cu_seqlens, positions, counts and the MTP roll on hand-written micro-batches. */
class SegmenterTest {
    private static final int E = 9; // EOD
    private static final int P = -1; // padding (never looked at: realLengths decide)
    private static final int B = 3;
    private static final int L = 8;
    private static final int[] TOKENS = {
        5, 6, E, 7, E, 8, P, P,   // 6 real: three documents, the last one cut off by padding
        E, 1, 2, 3, 4, 5, 6, E,   // starts with the EOD of a document begun in an earlier sample
        P, P, P, P, P, P, P, P,   // padding only
    };
    private static final int[] REAL = {6, 8, 0};
    private static final int[] SEGMENT_IDS = {
        1, 1, 1, 2, 2, 3, 0, 0,
        1, 2, 2, 2, 2, 2, 2, 2,
        0, 0, 0, 0, 0, 0, 0, 0,
    };

    @Test
    void segmentIdsStartAfterEachEodAndPaddingIsZero() {
        assertArrayEquals(SEGMENT_IDS, Segmenter.segmentIds(TOKENS, B, L, E, REAL));
        int[] allReal = Segmenter.segmentIds(new int[] {E, E, 1, E}, 1, 4, E, null);
        assertArrayEquals(new int[] {1, 2, 3, 3}, allReal);
    }

    @Test
    void segmentsCuSeqlensPositionsAndCounts() {
        Segments segments = Segmenter.segments(SEGMENT_IDS, B, L);
        assertEquals(B * L, segments.tokens());
        assertArrayEquals(new int[] {0, 3, 5, 8, 9}, segments.starts());
        assertArrayEquals(new int[] {3, 5, 6, 9, 16}, segments.ends());
        assertArrayEquals(new int[] {3, 2, 1, 1, 7}, Segmenter.tokenCounts(segments));
        // Row 0's padding joins its last segment; row 2 (padding only) is one sequence.
        assertArrayEquals(new int[] {0, 3, 5, 8, 9, 16, 24}, Segmenter.cuSeqlens(SEGMENT_IDS, B, L));
        assertArrayEquals(new int[] {
            0, 1, 2, 0, 1, 0, 0, 0,
            0, 0, 1, 2, 3, 4, 5, 6,
            0, 0, 0, 0, 0, 0, 0, 0,
        }, Segmenter.positions(SEGMENT_IDS, B, L));
        float[] mask = new float[B * L];
        Arrays.fill(mask, 0, 6, 1f);
        mask[1] = 0f;
        Arrays.fill(mask, 8, 16, 1f);
        assertArrayEquals(new int[] {2, 2, 1, 1, 7}, Segmenter.lossTokenCounts(segments, mask));
    }

    @Test
    void segmentsDoNotMergeAcrossRowsWithEqualIds() {
        int[] ids = {1, 1, 1, 1};
        Segments segments = Segmenter.segments(ids, 2, 2);
        assertArrayEquals(new int[] {0, 2}, segments.starts());
        assertArrayEquals(new int[] {2, 4}, segments.ends());
        assertArrayEquals(new int[] {0, 1, 0, 1}, Segmenter.positions(ids, 2, 2));
    }

    @Test
    void mtpRollShiftsInsideSegmentsAndMasksEachSegmentEnd() {
        int[] labels = {
            6, E, 7, E, 8, 0, 0, 0,
            1, 2, 3, 4, 5, 6, E, 4,
            0, 0, 0, 0, 0, 0, 0, 0,
        };
        float[] mask = {
            1, 1, 1, 1, 0, 0, 0, 0,
            0, 1, 1, 1, 1, 1, 1, 1,
            0, 0, 0, 0, 0, 0, 0, 0,
        };
        int[] rolledLabels = new int[B * L];
        float[] rolledMask = new float[B * L];
        MtpRoll.roll(labels, mask, SEGMENT_IDS, B, L, rolledLabels, rolledMask);
        assertArrayEquals(new int[] {
            E, 7, 0, 8, 0, 0, 0, 0,
            0, 3, 4, 5, 6, E, 4, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
        }, rolledLabels);
        assertArrayEquals(new float[] {
            1, 1, 0, 0, 0, 0, 0, 0,
            0, 1, 1, 1, 1, 1, 1, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
        }, rolledMask);
        // Depth 2: roll the rolled arrays again.
        int[] labels2 = new int[B * L];
        float[] mask2 = new float[B * L];
        MtpRoll.roll(rolledLabels, rolledMask, SEGMENT_IDS, B, L, labels2, mask2);
        assertArrayEquals(new int[] {7, 0, 0, 0, 0, 0, 0, 0}, Arrays.copyOf(labels2, 8));
        assertArrayEquals(new float[] {1, 0, 0, 0, 0, 0, 0, 0}, Arrays.copyOf(mask2, 8));
        assertThrows(IllegalArgumentException.class,
                () -> MtpRoll.roll(labels, mask, SEGMENT_IDS, B, L, labels, rolledMask));
    }

    /**
     * Row boundaries (PIT survivors): the MTP roll never takes a label from the next row, even when that row goes on
     * with the same id; cu_seqlens of rows whose segments start exactly at the row start, of rows of padding only, and
     * of empty shapes.
     */
    @Test
    void rowBoundariesInTheRollAndInCuSeqlens() {
        int[] sameId = {4, 4, 4, 4};
        int[] rolledLabels = new int[4];
        float[] rolledMask = new float[4];
        MtpRoll.roll(new int[] {1, 2, 3, 5}, new float[] {1, 1, 1, 1}, sameId, 2, 2, rolledLabels, rolledMask);
        assertArrayEquals(new int[] {2, 0, 5, 0}, rolledLabels, "each row's last position has no next label");
        assertArrayEquals(new float[] {1, 0, 1, 0}, rolledMask);

        assertArrayEquals(new int[] {0, 4, 8}, Segmenter.cuSeqlens(new int[] {1, 1, 1, 1, 2, 2, 2, 2}, 2, 4),
                "a segment starting at a row start belongs to that row");
        assertArrayEquals(new int[] {0, 4, 8}, Segmenter.cuSeqlens(new int[8], 2, 4), "padding-only rows: one each");
        assertArrayEquals(new int[] {0, 2, 4, 8, 12},
                Segmenter.cuSeqlens(new int[] {1, 1, 2, 0, 0, 0, 0, 0, 3, 3, 3, 3}, 3, 4));
        assertArrayEquals(new int[] {0}, Segmenter.cuSeqlens(new int[0], 2, 0), "B = 2 rows of L = 0");
        MtpRoll.roll(new int[0], new float[0], new int[0], 0, 4, new int[0], new float[0]); // B = 0: nothing to roll
    }

    @Test
    void badShapesAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Segmenter.segmentIds(TOKENS, 2, L, E, REAL));
        assertEquals("array of 24 values is not [B,L] = [2,8]", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Segmenter.segmentIds(TOKENS, B, L, E, new int[] {9, 0, 0}));
    }

    /**
     * Megatron's golden samples with reset_attention_mask: the segmenter's ids from the raw inputs equal the golden
     * segment ids with padding set to 0, and its positions equal Megatron's reset positions on real tokens.
     */
    @ParameterizedTest
    @ValueSource(strings = {"v1000_u16/L32_s1234_all_flags", "v1000_u16/L64_s1234_valid_pad",
        "v1000_u16/L128_s1234_resetattn_3ep", "v70000_i32/L64_s7_resets_no_attention_mask"})
    void agreesWithMegatronGoldenSamples(String name) {
        SafeTensors golden = GoldenFiles.read("megatron/" + name + ".safetensors");
        int length = Integer.parseInt(golden.meta("seq_length"));
        int width = (int) golden.get("raw_text").dim(1);
        int[] raw = golden.get("raw_text").toIntArray();
        int batch = raw.length / width;
        int[] inputs = new int[batch * length];
        int[] real = golden.get("num_real_tokens").toIntArray();
        for (int b = 0; b < batch; b++) {
            System.arraycopy(raw, b * width, inputs, b * length, length);
            real[b] = Math.min(real[b], length);
        }
        int[] expected = golden.get("segment_ids").toIntArray();
        int[] goldenPositions = golden.get("position_ids").toIntArray();
        boolean resetPositions = Boolean.parseBoolean(golden.meta("reset_position_ids"));
        int[] ids = Segmenter.segmentIds(inputs, batch, length, Integer.parseInt(golden.meta("eod_id")), real);
        int[] positions = Segmenter.positions(ids, batch, length);
        for (int b = 0; b < batch; b++) {
            for (int i = 0; i < length; i++) {
                int at = b * length + i;
                assertEquals(i < real[b] ? expected[at] : 0, ids[at], name + " row " + b + " position " + i);
                if (resetPositions && i < real[b]) {
                    assertEquals(goldenPositions[at], positions[at], name + " position id, row " + b + " position " + i);
                }
            }
        }
    }
}
