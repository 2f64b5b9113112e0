package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.testkit.Golden;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every golden KDA case through both CPU backends. Tolerances from the golden README: FLA's own float32
 * recurrence lands at 1e-7…4e-7 from these float64 files, so a float32 implementation must be within
 * 1e-5 for outputs and final states and 1e-4 for gradients (which sum more round-off).
 */
class KdaGoldenTest {

    static final double OUTPUT_TOLERANCE = 1e-5;
    static final double GRADIENT_TOLERANCE = 1e-4;

    static List<Path> goldenFiles() throws IOException, URISyntaxException {
        Path dir = Golden.path("kda");
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList();
        }
    }

    static Stream<Arguments> cases() throws IOException, URISyntaxException {
        return goldenFiles().stream().flatMap(file -> Stream.of(
                Arguments.of(file.getFileName().toString(), new KdaRecurrent(2)),
                Arguments.of(file.getFileName().toString(), new KdaChunked(2))));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void matchesGolden(String fileName, KdaBackend backend) throws Exception {
        SafeTensors file = SafeTensors.read(Golden.path("kda/" + fileName));
        KdaCase c = KdaCase.from(file);
        KdaBackend.KdaResult r = backend.forward(c.inputs(), c.options());
        KdaBackend.KdaGradients g = backend.backward(c.inputs(), c.options(), c.dO(), c.dHt());
        String where = fileName + " " + backend.name() + " ";
        assertClose(where + "o", r.o(), file.get("o").toDoubleArray(), OUTPUT_TOLERANCE);
        assertClose(where + "ht", r.ht(), file.get("ht").toDoubleArray(), OUTPUT_TOLERANCE);
        assertClose(where + "dq", g.dq(), file.get("dq").toDoubleArray(), GRADIENT_TOLERANCE);
        assertClose(where + "dk", g.dk(), file.get("dk").toDoubleArray(), GRADIENT_TOLERANCE);
        assertClose(where + "dv", g.dv(), file.get("dv").toDoubleArray(), GRADIENT_TOLERANCE);
        assertClose(where + "dg", g.dg(), file.get("dg").toDoubleArray(), GRADIENT_TOLERANCE);
        assertClose(where + "dbeta", g.dBeta(), file.get("dbeta").toDoubleArray(), GRADIENT_TOLERANCE);
        assertEquals(file.has("dh0"), g.dH0() != null, where + "dh0 presence");
        if (file.has("dh0")) {
            assertClose(where + "dh0", g.dH0(), file.get("dh0").toDoubleArray(), GRADIENT_TOLERANCE);
        }
        assertEquals(file.has("dA_log"), g.dALog() != null, where + "dA_log presence");
        if (file.has("dA_log")) {
            assertClose(where + "dA_log", g.dALog(), file.get("dA_log").toDoubleArray(), GRADIENT_TOLERANCE);
        }
        assertEquals(file.has("ddt_bias"), g.dDtBias() != null, where + "ddt_bias presence");
        if (file.has("ddt_bias")) {
            assertClose(where + "ddt_bias", g.dDtBias(), file.get("ddt_bias").toDoubleArray(), GRADIENT_TOLERANCE);
        }
        if (c.layout() == KdaCase.Layout.BATCHED_SEGMENT_IDS) {
            assertPaddingIsExactlyZero(file, r, g);
        }
    }

    /** The README promises exact zeros at padding: nothing is computed there. */
    private static void assertPaddingIsExactlyZero(SafeTensors file, KdaBackend.KdaResult r, KdaBackend.KdaGradients g) {
        int[] ids = file.get("segment_ids").toIntArray();
        int hv = (int) file.get("v").dim(2);
        int vd = (int) file.get("v").dim(3);
        int h = (int) file.get("q").dim(2);
        int kd = (int) file.get("q").dim(3);
        int padding = 0;
        for (int p = 0; p < ids.length; p++) {
            if (ids[p] != 0) {
                continue;
            }
            padding++;
            for (int i = 0; i < hv * vd; i++) {
                assertEquals(0f, r.o()[p * hv * vd + i], "o at padding " + p);
                assertEquals(0f, g.dv()[p * hv * vd + i], "dv at padding " + p);
            }
            for (int i = 0; i < h * kd; i++) {
                assertEquals(0f, g.dq()[p * h * kd + i], "dq at padding " + p);
                assertEquals(0f, g.dk()[p * h * kd + i], "dk at padding " + p);
            }
            for (int i = 0; i < hv * kd; i++) {
                assertEquals(0f, g.dg()[p * hv * kd + i], "dg at padding " + p);
            }
            for (int i = 0; i < hv; i++) {
                assertEquals(0f, g.dBeta()[p * hv + i], "dbeta at padding " + p);
            }
        }
        assertTrue(padding > 0, "the batched case has padding");
    }
}
