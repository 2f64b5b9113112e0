package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.conv.ShortConvFiles;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaCase;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.testkit.Golden;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class HostHelpersTest {

    static final Path GOLDEN = Golden.path("");

    @Test
    void bf16RoundsToNearestEven() {
        assertEquals(1.0f, Bf16.toFloat(Bf16.fromFloat(1.0f)));
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
        assertEquals(1.0f, Bf16.toFloat(Bf16.fromFloat(1.0f + 0x1p-8f)));
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go to 1 + 2^-6.
        assertEquals(1.0f + 0x1p-6f, Bf16.toFloat(Bf16.fromFloat(1.0f + 3 * 0x1p-8f)));
        assertEquals(-2.5f, Bf16.toFloat(Bf16.fromFloat(-2.5f)));
        assertTrue(Float.isNaN(Bf16.toFloat(Bf16.fromFloat(Float.NaN))));
        float x = 0.1234567f;
        assertTrue(Math.abs(Bf16.toFloat(Bf16.fromFloat(x)) - x) <= x * 0x1p-8f);
    }

    @Test
    void poolRoundsToItsGranule() {
        assertEquals(512, DeviceMemoryPool.roundUp(0));
        assertEquals(512, DeviceMemoryPool.roundUp(1));
        assertEquals(1024, DeviceMemoryPool.roundUp(513));
        assertThrows(IllegalArgumentException.class, () -> DeviceMemoryPool.roundUp(-1));
    }

    @Test
    void everyGoldenCaseFitsTheKernelsLimits() throws IOException {
        List<Path> kda;
        try (Stream<Path> s = Files.list(GOLDEN.resolve("kda"))) {
            kda = s.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList();
        }
        assertEquals(11, kda.size());
        for (Path file : kda) {
            KdaCase g = KdaCase.from(SafeTensors.read(file));
            KdaShapes.validate(g.inputs(), g.options());
            ChunkTable t = ChunkTable.of(g.inputs().segments());
            KdaLaunchPlan p = KdaLaunchPlan.of(t, g.inputs().tokens(), g.inputs().heads(), g.inputs().valueHeads(),
                    g.inputs().keyDim(), g.inputs().valueDim());
            assertEquals(g.inputs().sequences(), p.sequences(), file.toString());
        }
        try (Stream<Path> s = Files.list(GOLDEN.resolve("conv"))) {
            for (Path file : s.filter(p -> p.toString().endsWith(".safetensors")).toList()) {
                ShortConvInputs in = ShortConvFiles.inputs(SafeTensors.read(file));
                assertTrue(in.width() <= CudaConvBackend.MAX_WIDTH);
            }
        }
    }

    @Test
    void keyDimBeyondTheKernelsIsReportedByName() throws IOException {
        KdaCase g = KdaCase.from(SafeTensors.read(GOLDEN.resolve("kda/01_single_seq_T64_plain.safetensors")));
        KdaInputs in = g.inputs();
        int t = in.tokens();
        KdaInputs wide = new KdaInputs(in.segments(), 1, 1, 256, 16, new float[t * 256], new float[t * 256],
                new float[t * 16], new float[t * 256], new float[t], null, null, null);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KdaShapes.validate(wide, g.options()));
        assertEquals("keyDim K must be <= 128 on CUDA, got 256", e.getMessage());
        IllegalArgumentException n = assertThrows(IllegalArgumentException.class,
                () -> KdaShapes.require("dy", new float[3], 4));
        assertEquals("dy has 3 values, expected 4", n.getMessage());
    }
}
