package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class HostHelpersTest {

    static final Path GOLDEN = Path.of("../core/src/test/resources/golden");

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
    void relativeErrorMatchesTheGoldenReadmeDefinition() {
        assertEquals(0.0, DeviceCheck.relativeError(new float[] {1, 2}, new double[] {1, 2}));
        assertEquals(0.5, DeviceCheck.relativeError(new float[] {3, 0}, new double[] {2, 0}), 1e-12);
        assertEquals(Double.POSITIVE_INFINITY, DeviceCheck.relativeError(new float[] {Float.NaN}, new double[] {1}));
    }

    @Test
    void everyGoldenCaseBecomesValidOpInputs() throws IOException {
        List<Path> kda;
        try (Stream<Path> s = Files.list(GOLDEN.resolve("kda"))) {
            kda = s.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList();
        }
        assertEquals(11, kda.size());
        for (Path file : kda) {
            SafeTensors f = SafeTensors.read(file);
            GoldenKda g = GoldenKda.from(f);
            KdaShapes.validate(g.inputs(), g.options());
            assertEquals(Integer.parseInt(f.meta("N")), g.inputs().sequences(), file.toString());
            ChunkTable t = ChunkTable.of(g.inputs().segments());
            KdaLaunchPlan.of(t, g.inputs().tokens(), g.inputs().heads(), g.inputs().valueHeads(), g.inputs().keyDim(),
                    g.inputs().valueDim());
        }
        SafeTensors batched = SafeTensors.read(GOLDEN.resolve("kda/10_batched_segment_ids.safetensors"));
        GoldenKda g = GoldenKda.from(batched);
        assertEquals(240, g.inputs().tokens());
        assertEquals(2 * 80 + 6, g.inputs().segments().start(6), "row 2's first segment starts after 6 padding tokens");
        assertEquals(KdaOptions.Gate.SOFTPLUS, g.options().gate());
        try (Stream<Path> s = Files.list(GOLDEN.resolve("conv"))) {
            for (Path file : s.filter(p -> p.toString().endsWith(".safetensors")).toList()) {
                ShortConvInputs in = GoldenKda.conv(SafeTensors.read(file));
                assertTrue(in.width() <= ShortConvInputs.MAX_WIDTH);
            }
        }
    }

    @Test
    void wrongSizesAreReportedByName() throws IOException {
        GoldenKda g = GoldenKda.from(SafeTensors.read(GOLDEN.resolve("kda/02_varlen_short_docs.safetensors")));
        var in = g.inputs();
        var shortV = new io.kdapack.core.kda.KdaInputs(in.segments(), in.heads(), in.valueHeads(), in.keyDim(),
                in.valueDim(), in.q(), in.k(), new float[3], in.g(), in.beta(), null, null, in.h0());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KdaShapes.validate(shortV, g.options()));
        assertEquals("v has 3 values, expected " + in.tokens() * in.valueHeads() * in.valueDim(), e.getMessage());
        var gateWithoutBias = new KdaOptions(Float.NaN, false, KdaOptions.Gate.SOFTPLUS, 0f, false);
        IllegalArgumentException b = assertThrows(IllegalArgumentException.class,
                () -> KdaShapes.validate(in, gateWithoutBias));
        assertTrue(b.getMessage().startsWith("dtBias must not be null"), b.getMessage());
    }
}
