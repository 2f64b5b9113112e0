package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class VarlenTest {

    @Test
    void cuSeqlensRoundTripWithZeroLengthSequences() {
        int[] cu = {0, 0, 3, 3, 7};
        Segments s = Varlen.fromCuSeqlens(cu, 7);
        assertEquals(4, s.count());
        assertEquals(0, s.length(0));
        assertEquals(3, s.start(2));
        assertEquals(0, s.length(2));
        assertArrayEquals(cu, Varlen.toCuSeqlens(s));
        assertArrayEquals(new int[] {2, 2, 2, 4, 4, 4, 4}, Varlen.segmentIdsFromCuSeqlens(cu, 7));
    }

    @Test
    void segmentIdsStartANewSegmentWheneverTheIdChanges() {
        // row 0: 3,3,1,1,2 — three segments with decreasing ids; row 1: 0,5,5,0,5 — padding splits id 5 twice.
        int[] ids = {3, 3, 1, 1, 2, 0, 5, 5, 0, 5};
        Segments s = Varlen.fromSegmentIds(ids, 2, 5);
        assertArrayEquals(new int[] {0, 2, 4, 6, 9}, s.starts());
        assertArrayEquals(new int[] {2, 4, 5, 8, 10}, s.ends());
        assertEquals(10, s.tokens());
        assertArrayEquals(new int[] {1, 1, 2, 2, 3, 0, 4, 4, 0, 5}, Varlen.toSegmentIds(s));
    }

    @Test
    void sameIdInTheNextRowIsANewSegment() {
        Segments s = Varlen.fromSegmentIds(new int[] {1, 1, 1, 1}, 2, 2);
        assertArrayEquals(new int[] {0, 2}, s.starts());
        assertArrayEquals(new int[] {2, 4}, s.ends());
    }

    @Test
    void fixedLengthFormAddsAPhantomZeroLengthTail() {
        Segments s = Varlen.fromCuSeqlens(new int[] {0, 5, 9}, 9);
        assertArrayEquals(new int[] {0, 5, 9, 9, 9}, Varlen.fixedLengthCuSeqlens(s, 4));
        assertArrayEquals(new int[] {0, 5, 9}, Varlen.fixedLengthCuSeqlens(s, 2));
        Segments back = Varlen.fromCuSeqlens(Varlen.fixedLengthCuSeqlens(s, 4), 9);
        assertEquals(4, back.count());
        assertEquals(0, back.length(3));
    }

    @Test
    void tooManySegmentsForTheFixedLengthFormIsAnErrorSayingHowMany() {
        Segments s = Varlen.fromCuSeqlens(new int[] {0, 1, 2, 3}, 3);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Varlen.fixedLengthCuSeqlens(s, 2));
        assertEquals("found 3 segments, more than maxSegments = 2", e.getMessage());
    }

    @Test
    void badCuSeqlensAreRejectedWithTheOffendingValue() {
        assertMessage("cu_seqlens must start at 0, got cu_seqlens[0] = 1", () -> Varlen.fromCuSeqlens(new int[] {1, 4}, 4));
        assertMessage("cu_seqlens must be non-decreasing, got cu_seqlens[2] = 2 < cu_seqlens[1] = 3",
                () -> Varlen.fromCuSeqlens(new int[] {0, 3, 2, 4}, 4));
        assertMessage("cu_seqlens must end at T = 5, got cu_seqlens[1] = 4", () -> Varlen.fromCuSeqlens(new int[] {0, 4}, 5));
        assertMessage("cu_seqlens must have at least one entry, got []", () -> Varlen.fromCuSeqlens(new int[0], 0));
    }

    @Test
    void badSegmentIdsAreRejected() {
        assertMessage("segment_ids must be >= 0 (0 = padding), got segment_ids[1,0] = -2",
                () -> Varlen.fromSegmentIds(new int[] {1, 1, -2, 1}, 2, 2));
        assertMessage("segment_ids has 3 values, expected [B,T] = [2,2] = 4",
                () -> Varlen.fromSegmentIds(new int[] {1, 1, 1}, 2, 2));
    }

    @Test
    void segmentsMustBeOrderedAndInside() {
        assertMessage("segment 1 = [2, 4) must satisfy 3 <= start <= end <= tokens = 5",
                () -> new Segments(5, new int[] {0, 2}, new int[] {3, 4}));
        assertMessage("segment 0 = [0, 6) must satisfy 0 <= start <= end <= tokens = 5",
                () -> new Segments(5, new int[] {0}, new int[] {6}));
        assertMessage("starts has 2 entries but ends has 1", () -> new Segments(5, new int[] {0, 1}, new int[] {1}));
    }

    @Test
    void cuSeqlensCannotExpressPadding() {
        Segments padded = Varlen.fromSegmentIds(new int[] {1, 0, 2}, 1, 3);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Varlen.toCuSeqlens(padded));
        assertTrue(e.getMessage().contains("padding"), e.getMessage());
    }

    /**
     * The smallest legal inputs at each boundary (PIT survivors): no sequence over no tokens, rows of length 0, a
     * fixed-length form of one segment; and segment ids of a bad {@code cu_seqlens} refused by name, not by an index
     * out of bounds.
     */
    @Test
    void smallestLegalInputsAtEachBoundary() {
        Varlen.validateCuSeqlens(new int[] {0}, 0);
        assertArrayEquals(new int[0], Varlen.segmentIdsFromCuSeqlens(new int[] {0}, 0));
        assertEquals(0, Varlen.fromSegmentIds(new int[0], 2, 0).count(), "B = 2 rows of T = 0 tokens");
        Segments one = Varlen.fromCuSeqlens(new int[] {0, 5}, 5);
        assertArrayEquals(new int[] {0, 5}, Varlen.fixedLengthCuSeqlens(one, 1));
        assertMessage("cu_seqlens must end at T = 3, got cu_seqlens[1] = 5",
                () -> Varlen.segmentIdsFromCuSeqlens(new int[] {0, 5}, 3));
    }

    static void assertMessage(String expected, Runnable action) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, action::run);
        assertEquals(expected, e.getMessage());
    }
}
