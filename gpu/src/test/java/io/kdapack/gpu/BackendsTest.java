package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kdapack.core.backend.Backend;
import io.kdapack.core.backend.Backends;
import io.kdapack.core.kda.KdaChunked;
import org.junit.jupiter.api.Test;

/** Core's backend switch with the gpu module on the class path: its provider is found through the service file. */
class BackendsTest {

    @Test
    void withoutADriverAutoFallsBackToTheCpu() {
        assumeTrue(CudaDevice.unavailableReason() != null, "this machine has a CUDA driver");
        assertEquals(new KdaChunked(1).name(), Backends.select(Backend.AUTO, 1).name());
    }

    @Test
    void withoutADriverCudaFailsWithTheReason() {
        String reason = CudaDevice.unavailableReason();
        assumeTrue(reason != null, "this machine has a CUDA driver");
        assertTrue(reason.startsWith("no CUDA driver") || reason.startsWith("no CUDA device")
                || reason.startsWith("no usable CUDA driver"), reason);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Backends.select(Backend.CUDA, 1));
        assertEquals("backend cuda requested but " + reason + " (use backend cpu or auto on machines without a GPU)",
                e.getMessage());
        // Asking again gives the same answer (the failed library load is remembered, not retried).
        assertEquals(reason, CudaDevice.unavailableReason());
        CudaUnavailableException open = assertThrows(CudaUnavailableException.class, () -> CudaDevice.open(0));
        assertEquals(reason, open.getMessage());
    }
}
