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
    void packedCostEqualsUnpackedCost() {
        // Tokens covered by chunks = tokens of the documents, whatever the packing.
        int[] cu = DeviceCheck.packedCuSeqlens(8192, 64, 7);
        ChunkTable t = ChunkTable.of(cu(cu));
        int covered = 0;
        for (int len : t.chunkLength()) {
            assertTrue(len >= 1 && len <= ChunkTable.CHUNK);
            covered += len;
        }
        assertEquals(8192, covered);
        for (int c = 0; c + 1 < t.count(); c++) {
            assertEquals(t.chunkStart()[c] + t.chunkLength()[c], t.chunkStart()[c + 1], "chunks tile the tokens");
        }
    }

    @Test
    void tokenSequenceMarksPadding() {
        Segments s = new Segments(10, new int[] {1, 5}, new int[] {4, 9});
        assertArrayEquals(new int[] {-1, 0, 0, 0, -1, 1, 1, 1, 1, -1}, ChunkTable.tokenSequence(s));
    }

    @Test
    void packedDocumentsAreNonEmptyAndOrdered() {
        int[] cu = DeviceCheck.packedCuSeqlens(8192, 64, 7);
        assertEquals(65, cu.length);
        assertEquals(0, cu[0]);
        assertEquals(8192, cu[64]);
        int notMultiple = 0;
        for (int i = 0; i < 64; i++) {
            int len = cu[i + 1] - cu[i];
            assertTrue(len >= 1, "document " + i + " is empty");
            if (len % 64 != 0) {
                notMultiple++;
            }
        }
        assertTrue(notMultiple > 32, "most documents end in a partial chunk: " + notMultiple);
    }
}
