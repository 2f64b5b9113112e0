package io.kdapack.core.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaRecurrent;
import org.junit.jupiter.api.Test;

/** The backend switch where no device backend is on the class path (core's own tests). */
class BackendsTest {

    @Test
    void parsesTheFourValuesAndRefusesOthers() {
        assertEquals(Backend.AUTO, Backend.parse("auto"));
        assertEquals(Backend.CUDA, Backend.parse(" CUDA "));
        assertEquals("reference", Backend.parse("Reference").label());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Backend.parse("gpu"));
        assertEquals("backend must be one of auto, cpu, cuda, reference; got 'gpu'", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Backend.parse(null));
    }

    @Test
    void eachCpuChoiceGivesItsKernels() {
        assertEquals(new KdaChunked(1).name(), Backends.select(Backend.CPU, 1).name());
        assertEquals(new KdaRecurrent(1).name(), Backends.select(Backend.REFERENCE, 1).name());
        assertEquals(new KdaChunked(1).name(), Backends.select(Backend.AUTO, 1).name());
    }

    @Test
    void cudaWithoutTheGpuModuleIsAnErrorSayingSo() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Backends.select(Backend.CUDA, 1));
        assertTrue(e.getMessage().contains("the gpu module is not on the class path"), e.getMessage());
    }
}
