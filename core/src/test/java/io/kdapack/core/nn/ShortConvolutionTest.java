package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kdapack.core.conv.Activation;
import io.kdapack.core.conv.ShortConv;
import io.kdapack.core.kda.Segments;
import java.util.List;
import java.util.Random;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

class ShortConvolutionTest {

    @Test
    void namesParametersInConv1dLayout() {
        ShortConvolution conv = new ShortConvolution("self_attn.q_conv1d", 6, 4, false, Activation.SILU, ShortConv.CPU);
        assertEquals(List.of("self_attn.q_conv1d.weight"), conv.parameters().stream().map(Parameter::name).toList());
        assertArrayEquals(new int[] {6, 1, 4}, conv.weight().shape());
    }

    @Test
    void gradientsMatchFiniteDifferences() {
        Random random = new Random(10);
        ShortConvolution conv = new ShortConvolution("conv", 3, 4, true, Activation.SILU, ShortConv.CPU);
        GradCheck.randomize(conv, random, 0.5);
        Segments segments = new Segments(9, new int[] {0, 5}, new int[] {4, 9});
        float[] x = GradCheck.normal(random, 9 * 3, 1);
        float[] dy = GradCheck.normal(random, 9 * 3, 1);
        float[] dx = conv.backward(conv.forward(x, segments), dy);
        DoubleSupplier loss = () -> GradCheck.dot(conv.forward(x, segments).output(), dy);
        GradCheck.assertGradient("dx", dx, x, loss);
        for (Parameter p : conv.parameters()) {
            GradCheck.assertGradient(p.name(), p.grads(), p.values(), loss);
        }
        for (int i = 4 * 3; i < 5 * 3; i++) {
            assertEquals(0f, dx[i], "padding token 4");
        }
    }
}
