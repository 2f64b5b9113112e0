package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import org.junit.jupiter.api.Test;

class ChunkTableTest {

    private static Segments cu(int... cu) {
        return Varlen.fromCuSeqlens(cu, cu[cu.length - 1]);
    }

    @Test
    void cutsEverySequenceIntoChunksOf64WithoutPadding() {
        // Case 03's boundaries: lengths 15, 85, 200, 1, 99.
        ChunkTable t = ChunkTable.of(cu(0, 15, 100, 300, 301, 400));
        assertArrayEquals(new int[] {0, 15, 79, 100, 164, 228, 292, 300, 301, 365}, t.chunkStart());
        assertArrayEquals(new int[] {15, 64, 21, 64, 64, 64, 8, 1, 64, 35}, t.chunkLength());
        assertArrayEquals(new int[] {0, 1, 3, 7, 8, 10}, t.seqChunkStart());
        assertEquals(10, t.count());
        assertEquals(5, t.sequences());
    }

    @Test
    void zeroLengthSequencesHaveNoChunks() {
        ChunkTable t = ChunkTable.of(cu(0, 0, 50, 50, 120, 120));
        assertArrayEquals(new int[] {0, 0, 1, 1, 3, 3}, t.seqChunkStart());
        assertArrayEquals(new int[] {0, 50, 114}, t.chunkStart());
        assertArrayEquals(new int[] {50, 64, 6}, t.chunkLength());
    }

    @Test
    void tokenSequenceMarksPadding() {
        Segments s = new Segments(10, new int[] {1, 5}, new int[] {4, 9});
        assertArrayEquals(new int[] {-1, 0, 0, 0, -1, 1, 1, 1, 1, -1}, ChunkTable.tokenSequence(s));
    }
}
