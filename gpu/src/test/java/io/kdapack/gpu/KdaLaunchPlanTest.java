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

    @Test
    void benchmarkScratchFitsEasilyOnAGpu() {
        KdaLaunchPlan p = new KdaLaunchPlan(8192, 64, 160, 16, 16, 128, 128);
        long total = p.forwardScratchBytes() + p.backwardScratchBytes();
        assertTrue(total < 4L << 30, "scratch " + total + " bytes");
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
