package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.model.DirectionalCheck;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.ModelInit;
import io.kdapack.core.model.TinyModels;
import io.kdapack.core.nn.Parameter;
import java.util.List;
import java.util.Random;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

class KimiDeltaAttentionTest {
    private static final int HIDDEN = 12;
    /**
     * Central differences with step 1e-2 along a unit direction: truncation O(h²) ≈ 1e-4 and float32 round-off of a
     * loss of size ~10 about 1e-6 / h ≈ 1e-4, both relative to ‖g‖; observed errors are below 1.5e-3, and a wrong or
     * missing term gives O(1).
     */
    private static final double TOLERANCE = 1e-2;
    private static final float STEP = 1e-2f;

    private static KimiDeltaAttention layer(Double lowerBound, long seed) {
        KimiDeltaAttention kda = new KimiDeltaAttention("self_attn", HIDDEN, new KdaConfig(2, 4, 6, 3, lowerBound, 1e-5),
                new KdaChunked(1));
        ModelInit.initialize(kda.parameters(), seed);
        TinyModels.enlarge(kda.parameters(), seed);
        return kda;
    }

    @Test
    void namesAndShapesFollowFla() {
        KimiDeltaAttention kda = layer(null, 1);
        List<String> names = kda.parameters().stream().map(Parameter::name).toList();
        assertEquals(List.of("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                "self_attn.q_conv1d.weight", "self_attn.k_conv1d.weight", "self_attn.v_conv1d.weight",
                "self_attn.f_proj.0.weight", "self_attn.f_proj.1.weight", "self_attn.b_proj.weight", "self_attn.A_log",
                "self_attn.dt_bias", "self_attn.g_proj.0.weight", "self_attn.g_proj.1.weight", "self_attn.g_proj.1.bias",
                "self_attn.o_norm.weight", "self_attn.o_proj.weight"), names);
        // H = 2, HV = 4, K = V = 6, W = 3, d = 12.
        int[][] shapes = {{12, 12}, {12, 12}, {24, 12}, {12, 1, 3}, {12, 1, 3}, {24, 1, 3}, {6, 12}, {24, 6}, {4, 12},
                {4}, {24}, {6, 12}, {24, 6}, {24}, {6}, {12, 24}};
        for (int i = 0; i < shapes.length; i++) {
            assertArrayEquals(shapes[i], kda.parameters().get(i).shape(), names.get(i));
        }
        assertEquals(KdaOptions.Gate.SOFTPLUS, kda.options().gate());
        assertEquals(KdaOptions.Gate.LOWER_BOUND, layer(-2.0, 1).options().gate());
        assertTrue(kda.options().qkL2Norm() && kda.options().betaSigmoid());
    }

    @Test
    void rejectsValueHeadsThatAreNotAMultiple() {
        var e = assertThrows(IllegalArgumentException.class, () -> new KimiDeltaAttention("a", 8,
                new KdaConfig(2, 3, 4, 4, null, 1e-5), new KdaChunked(1)));
        assertTrue(e.getMessage().contains("num_v_heads (3)"), e.getMessage());
    }

    /** Every parameter's and the input's gradient against central differences, both gate forms, with padding. */
    @Test
    void gradientsMatchFiniteDifferences() {
        for (Double lowerBound : new Double[] {null, -2.0}) {
            KimiDeltaAttention kda = layer(lowerBound, 2);
            Random random = new Random(3);
            // Two documents and padding at tokens 5 and 11.
            Segments segments = new Segments(12, new int[] {0, 6}, new int[] {5, 11});
            float[] x = normal(random, 12 * HIDDEN);
            float[] dy = normal(random, 12 * HIDDEN);
            KimiDeltaAttention.Saved saved = kda.forward(x, segments);
            float[] dx = kda.backward(saved, dy);
            for (int j = 0; j < HIDDEN; j++) {
                assertEquals(0f, saved.output()[5 * HIDDEN + j], "padding output");
                assertEquals(0f, dx[11 * HIDDEN + j], "padding input gradient");
            }
            DoubleSupplier loss = () -> dot(kda.forward(x, segments).output(), dy);
            String label = " (lower_bound " + lowerBound + ")";
            assertSmall("dx" + label, DirectionalCheck.error("dx", dx, x, loss, STEP, 7));
            for (Parameter p : kda.parameters()) {
                assertSmall(p.name() + label, DirectionalCheck.error(p.name(), p.grads(), p.values(), loss, STEP, 8));
            }
        }
    }

    private static void assertSmall(String name, double error) {
        assertTrue(error < TOLERANCE, name + ": error " + error + " relative to the gradient norm");
    }

    private static float[] normal(Random random, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) random.nextGaussian();
        }
        return a;
    }

    private static double dot(float[] a, float[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += (double) a[i] * b[i];
        }
        return s;
    }
}
