package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.Varlen;
import org.junit.jupiter.api.Test;

/** The device check's host side: its packed problems and its error measure. */
class DeviceCheckTest {

    @Test
    void packedCostEqualsUnpackedCost() {
        // Tokens covered by chunks = tokens of the documents, whatever the packing.
        int[] cu = DeviceCheck.packedCuSeqlens(8192, 64, 7);
        ChunkTable t = ChunkTable.of(Varlen.fromCuSeqlens(cu, cu[cu.length - 1]));
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

    @Test
    void relativeErrorMatchesTheGoldenReadmeDefinition() {
        assertEquals(0.0, DeviceCheck.relativeError(new float[] {1, 2}, new double[] {1, 2}));
        assertEquals(0.5, DeviceCheck.relativeError(new float[] {3, 0}, new double[] {2, 0}), 1e-12);
        assertEquals(Double.POSITIVE_INFINITY, DeviceCheck.relativeError(new float[] {Float.NaN}, new double[] {1}));
    }
}
