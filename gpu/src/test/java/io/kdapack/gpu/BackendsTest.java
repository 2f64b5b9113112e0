package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class BackendsTest {

    /** Stands in for core's CPU backend: the switch only needs something to hand back. */
    private static final class FakeCpu implements KdaBackend {
        @Override
        public String name() {
            return "cpu-test";
        }

        @Override
        public KdaResult forward(KdaInputs in, KdaOptions options) {
            throw new UnsupportedOperationException();
        }

        @Override
        public KdaGradients backward(KdaInputs in, KdaOptions options, float[] dO, float[] dHt) {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void parsesTheThreeValuesAndRefusesOthers() {
        assertEquals(Backends.Choice.AUTO, Backends.Choice.parse("auto"));
        assertEquals(Backends.Choice.CUDA, Backends.Choice.parse(" CUDA "));
        assertEquals("cpu", Backends.Choice.parse("cpu").label());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Backends.Choice.parse("gpu"));
        assertTrue(e.getMessage().contains("auto, cpu, cuda; got 'gpu'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Backends.Choice.parse(null));
    }

    @Test
    void cpuIsTakenAsGivenAndCreatedOnlyWhenChosen() {
        KdaBackend cpu = new FakeCpu();
        AtomicInteger created = new AtomicInteger();
        assertSame(cpu, Backends.select("cpu", () -> {
            created.incrementAndGet();
            return cpu;
        }));
        assertEquals(1, created.get());
    }

    @Test
    void withoutADriverAutoFallsBackToTheCpu() {
        assumeTrue(CudaDevice.unavailableReason() != null, "this machine has a CUDA driver");
        KdaBackend cpu = new FakeCpu();
        assertSame(cpu, Backends.select("auto", () -> cpu));
    }

    @Test
    void withoutADriverCudaFailsWithTheReason() {
        String reason = CudaDevice.unavailableReason();
        assumeTrue(reason != null, "this machine has a CUDA driver");
        assertTrue(reason.startsWith("no CUDA driver") || reason.startsWith("no CUDA device")
                || reason.startsWith("no usable CUDA driver"), reason);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Backends.select("cuda", FakeCpu::new));
        assertTrue(e.getMessage().startsWith("backend cuda requested but no "), e.getMessage());
        assertTrue(e.getMessage().contains("--backend cpu"), e.getMessage());
        // Asking again gives the same answer (the failed library load is remembered, not retried).
        assertEquals(reason, CudaDevice.unavailableReason());
        CudaUnavailableException open = assertThrows(CudaUnavailableException.class, () -> CudaDevice.open(0));
        assertEquals(reason, open.getMessage());
    }
}
