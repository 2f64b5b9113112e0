package io.kdapack.core.conv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaAssertions;
import io.kdapack.testkit.Golden;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every conv case of the golden vectors (float64 reference, float32 inputs). Tolerances from the golden
 * README: a float32 implementation sits far below 1e-5 for outputs and final states and below 1e-4 for
 * gradients.
 */
class ShortConvGoldenTest {
    private static final double OUTPUT_TOLERANCE = 1e-5;
    private static final double GRADIENT_TOLERANCE = 1e-4;

    @ParameterizedTest
    @ValueSource(strings = {"c01_single_seq_W4_silu_bias", "c02_varlen_short_docs_no_bias", "c03_W3_no_activation",
            "c04_initial_state"})
    void matchesGolden(String name) throws Exception {
        SafeTensors file = SafeTensors.read(Golden.path("conv/" + name + ".safetensors"));
        ShortConvInputs in = ShortConvFiles.inputs(file);
        ShortConvOutputs out = ShortConv.forward(in);
        ShortConvGradients grads = ShortConv.backward(in, ShortConvFiles.upstreamGradient(file), null);

        assertClose(file, "y", out.y(), OUTPUT_TOLERANCE);
        assertClose(file, "final_state", out.finalState(), OUTPUT_TOLERANCE);
        assertClose(file, "dx", grads.dx(), GRADIENT_TOLERANCE);
        assertClose(file, "dweight", grads.dweight(), GRADIENT_TOLERANCE);
        assertEquals(file.has("dbias"), grads.dbias() != null, "dbias present iff the case has a bias");
        if (file.has("dbias")) {
            assertClose(file, "dbias", grads.dbias(), GRADIENT_TOLERANCE);
        }
        assertEquals(file.has("dinitial_state"), grads.dinitialState() != null);
        if (file.has("dinitial_state")) {
            assertClose(file, "dinitial_state", grads.dinitialState(), GRADIENT_TOLERANCE);
        }
    }

    private static void assertClose(SafeTensors file, String name, float[] actual, double tolerance) {
        double[] expected = file.get(name).toDoubleArray();
        assertEquals(expected.length, actual.length, name + " length");
        double err = KdaAssertions.relativeError(actual, expected);
        assertTrue(err <= tolerance, name + ": relative error " + err + " > " + tolerance);
    }
}
