package io.kdapack.core.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.kda.Segments;
import java.util.Random;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

class SegmentAttentionTest {

    /** Against the masked-softmax formula in double; 300-token segment crosses the 128-row blocks. */
    @Test
    void matchesDirectFormula() {
        Random random = new Random(8);
        int heads = 2;
        int dk = 5;
        int dv = 3;
        // padding at 0, 301..302 and 306; segments of 300, 1 and 3 tokens.
        Segments segments = new Segments(307, new int[] {1, 303, 303, 304}, new int[] {301, 303, 304, 306});
        int tokens = segments.tokens();
        float[] q = GradCheck.normal(random, tokens * heads * dk, 1);
        float[] k = GradCheck.normal(random, tokens * heads * dk, 1);
        float[] v = GradCheck.normal(random, tokens * heads * dv, 1);
        float scale = 0.4f;
        float[] o = new SegmentAttention(heads, dk, dv, scale).forward(segments, q, k, v).output();

        float[] expected = new float[o.length];
        for (int n = 0; n < segments.count(); n++) {
            for (int t = segments.start(n); t < segments.end(n); t++) {
                for (int h = 0; h < heads; h++) {
                    double[] w = new double[t + 1];
                    double max = Double.NEGATIVE_INFINITY;
                    for (int s = segments.start(n); s <= t; s++) {
                        double dot = 0;
                        for (int j = 0; j < dk; j++) {
                            dot += q[(t * heads + h) * dk + j] * k[(s * heads + h) * dk + j];
                        }
                        w[s] = scale * dot;
                        max = Math.max(max, w[s]);
                    }
                    double sum = 0;
                    for (int s = segments.start(n); s <= t; s++) {
                        w[s] = Math.exp(w[s] - max);
                        sum += w[s];
                    }
                    for (int j = 0; j < dv; j++) {
                        double acc = 0;
                        for (int s = segments.start(n); s <= t; s++) {
                            acc += w[s] / sum * v[(s * heads + h) * dv + j];
                        }
                        expected[(t * heads + h) * dv + j] = (float) acc;
                    }
                }
            }
        }
        // float32 scores and sums over up to 300 keys: round-off ~1e-6 relative.
        double err = GradCheck.relativeError(o, expected);
        assertTrue(err < 1e-5, "relative error " + err);
        for (int t : new int[] {0, 301, 302, 306}) {
            for (int i = 0; i < heads * dv; i++) {
                assertEquals(0f, o[t * heads * dv + i], "padding token " + t);
            }
        }
    }

    @Test
    void gradientsMatchFiniteDifferences() {
        Random random = new Random(9);
        int heads = 2;
        int dk = 4;
        int dv = 3;
        Segments segments = new Segments(9, new int[] {0, 4, 5}, new int[] {4, 5, 8});
        float[] q = GradCheck.normal(random, 9 * heads * dk, 1);
        float[] k = GradCheck.normal(random, 9 * heads * dk, 1);
        float[] v = GradCheck.normal(random, 9 * heads * dv, 1);
        float[] dOut = GradCheck.normal(random, 9 * heads * dv, 1);
        SegmentAttention attention = new SegmentAttention(heads, dk, dv, 0.5f);
        SegmentAttention.Gradients g = attention.backward(attention.forward(segments, q, k, v), dOut);
        DoubleSupplier loss = () -> GradCheck.dot(attention.forward(segments, q, k, v).output(), dOut);
        GradCheck.assertGradient("dq", g.dq(), q, loss);
        GradCheck.assertGradient("dk", g.dk(), k, loss);
        GradCheck.assertGradient("dv", g.dv(), v, loss);
        for (int i = 8 * heads * dk; i < 9 * heads * dk; i++) {
            assertEquals(0f, g.dq()[i], "padding token 8 gets no gradient");
            assertEquals(0f, g.dk()[i]);
        }
    }
}
