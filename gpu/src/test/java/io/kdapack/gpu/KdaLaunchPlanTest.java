package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class KdaLaunchPlanTest {

    @Test
    void benchmarkShapeGrids() {
        // T=8192 in one document: 128 chunks; H=HV=16, K=V=128 → 4 value blocks of 32.
        KdaLaunchPlan p = new KdaLaunchPlan(8192, 1, 128, 16, 16, 128, 128);
        assertEquals(new Launch(128, 16, 1, 128, 0), p.prep());
        assertEquals(new Launch(128, 16, 1, 256, 4 * (3 * 16 * 128 + 2 * 64 * 64)), p.intra());
        assertEquals(new Launch(1, 16, 4, 256, 0), p.stateSweep());
        assertEquals(new Launch(128, 16, 4, 256, 0), p.output());
        assertEquals(new Launch(128, 16, 1, 256, 4 * (3 * 64 * 64 + 128)), p.backwardIntra());
        assertEquals(new Launch(16, 1, 1, 128, 0), p.backwardParams());
        assertEquals(new Launch(128, 16, 1, 128, 0), p.backwardQk());
    }

    @Test
    void dynamicSharedMemoryFitsTheLimitTheDeviceRaises() {
        KdaLaunchPlan p = new KdaLaunchPlan(64, 1, 1, 1, 1, KdaLaunchPlan.MAX_KEY_DIM, 512);
        assertTrue(p.intra().sharedBytes() <= CudaDevice.MAX_DYNAMIC_SHARED, "intra " + p.intra().sharedBytes());
        assertTrue(p.backwardIntra().sharedBytes() <= CudaDevice.MAX_DYNAMIC_SHARED);
        // Hopper allows 227 KB per block; the raised limit stays well inside it.
        assertTrue(CudaDevice.MAX_DYNAMIC_SHARED <= 227 * 1024);
    }

    @Test
    void oddValueDimRoundsTheValueBlocksUp() {
        KdaLaunchPlan p = new KdaLaunchPlan(400, 5, 10, 2, 4, 32, 33);
        assertEquals(2, p.valueBlocks());
        assertEquals(new Launch(5, 4, 2, 256, 0), p.stateSweep());
        assertEquals(new Launch(10, 2, 1, 128, 0), p.backwardQk());
    }

    @Test
    void bufferSizes() {
        KdaLaunchPlan p = new KdaLaunchPlan(200, 6, 7, 2, 2, 32, 16);
        assertEquals(200L * 2 * 32, p.tokenKeyElements());
        assertEquals(200L * 2 * 16, p.tokenValueElements());
        assertEquals(200L * 2 * 64, p.tokenChunkElements());
        assertEquals(7L * 2 * 32 * 16, p.chunkStateElements());
        assertEquals(6L * 2 * 32 * 16, p.stateElements());
        long tk = 200L * 2 * 32;
        long expectedForward = 4 * (3 * tk + 200 * 2 + 2 * 200L * 2 * 64 + 2 * 200L * 2 * 16 + 7L * 2 * 32 * 16) + 8 * tk;
        assertEquals(expectedForward, p.forwardScratchBytes());
        assertTrue(p.backwardScratchBytes() > p.chunkStateElements() * 4);
    }

    /**
     * The benchmark's shape (T 8192, N 64, C 160, H = HV 16, K = V 128), buffer by buffer as {@code KdaDeviceOp}
     * allocates them: the exact byte counts, so that a buffer left out or sized by the wrong letter is caught, and
     * the total well under a GPU's memory (1.41 GiB).
     */
    @Test
    void benchmarkScratchFitsEasilyOnAGpu() {
        KdaLaunchPlan p = new KdaLaunchPlan(8192, 64, 160, 16, 16, 128, 128);
        long tokenKey = 8192L * 16 * 128;         // [T,HV,K]
        long tokenValue = 8192L * 16 * 128;       // [T,HV,V]
        long tokenChunk = 8192L * 16 * 64;        // [T,HV,64]
        long tokenHead = 8192L * 16;              // [T,HV]
        long chunkStates = 160L * 16 * 128 * 128; // [C,HV,K,V]
        long forward = 4 * 3 * tokenKey           // qhat, khat, w
                + 8 * tokenKey                    // gam (Γ, fp64)
                + 4 * tokenHead                   // betah
                + 4 * 2 * tokenChunk              // aqk, linv
                + 4 * 2 * tokenValue              // u, vnew
                + 4 * chunkStates;                // hchunk
        long backward = 4 * chunkStates           // dhend
                + 4 * 2 * tokenValue              // dvnew, sBv
                + 4 * 7 * tokenKey                // sQg, sKd, sW, sBk, dqhat, dkhat, dgam
                + 4 * tokenChunk                  // sAqk
                + 4 * 2 * tokenHead;              // dbetah, dalogTok
        assertEquals(705_167_360L, forward);
        assertEquals(806_354_944L, backward);
        assertEquals(forward, p.forwardScratchBytes());
        assertEquals(backward, p.backwardScratchBytes());
        assertTrue(forward + backward < 3L << 29, "scratch " + (forward + backward) + " bytes");
        // Linear in T and C: twice the tokens and chunks, twice the bytes.
        KdaLaunchPlan twice = new KdaLaunchPlan(16384, 64, 320, 16, 16, 128, 128);
        assertEquals(2 * p.forwardScratchBytes(), twice.forwardScratchBytes());
        assertEquals(2 * p.backwardScratchBytes(), twice.backwardScratchBytes());
    }

    @Test
    void refusesShapesTheKernelsCannotTake() {
        IllegalArgumentException k = assertThrows(IllegalArgumentException.class,
                () -> new KdaLaunchPlan(64, 1, 1, 1, 1, 256, 64));
        assertTrue(k.getMessage().contains("K must be in [1, 128]"), k.getMessage());
        IllegalArgumentException hv = assertThrows(IllegalArgumentException.class,
                () -> new KdaLaunchPlan(64, 1, 1, 2, 3, 64, 64));
        assertTrue(hv.getMessage().contains("H=2 HV=3"), hv.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Launch(0, 1, 1, 128, 0));
    }

    @Test
    void convLaunchCoversAllChannels() {
        assertEquals(new Launch(64, 1, 1, 128, 0), CudaConvBackend.tokenLaunch(32, 64));
        assertEquals(new Launch(10, 3, 1, 128, 0), CudaConvBackend.tokenLaunch(257, 10));
        // A micro-batch of 16 × 8192 packed tokens: beyond grid.y's 65535, fine on x.
        assertEquals(131072, CudaConvBackend.tokenLaunch(4096, 131072).gridX());
    }
}
