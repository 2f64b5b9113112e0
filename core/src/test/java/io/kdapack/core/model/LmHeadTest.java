package io.kdapack.core.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.kdapack.core.linalg.Gemm;
import io.kdapack.core.loss.CrossEntropy;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.nn.Parameter;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LmHeadTest {

    private static final int HIDDEN = 40;
    private static final int VOCAB = 300;

    /**
     * The blocked loss against the whole {@code [T,V]} logits formed at once, as the head computed it before: the
     * same bits for every figure, at a token count that leaves a short last block. The weight gradient is the figure
     * that would move if the blocks were not multiples of Gemm's k block (its sums would then be cut elsewhere).
     */
    @Test
    void blockedLossAndBackwardAreTheBitsOfTheWholeLogits() {
        int tokens = 2 * LmHead.TOKEN_BLOCK + 88;
        Random random = new Random(7);
        float[] h = normal(random, tokens * HIDDEN);
        int[] labels = random.ints(tokens, 0, VOCAB).toArray();
        float[] mask = new float[tokens];
        for (int t = 0; t < tokens; t++) {
            mask[t] = random.nextInt(5) == 0 ? 0f : 1f;
        }
        double lossWeight = 1.0 / 777;
        Parameter blocked = weight(random);
        Parameter whole = new Parameter("w", blocked.shape(), blocked.values().clone(), blocked.grads().clone());

        TokenLoss loss = new LmHead(blocked).loss(h, tokens, labels, mask, lossWeight);

        float[] logits = new LmHead(whole).forward(h, tokens);
        CrossEntropy.Result ce = CrossEntropy.forward(logits, labels, VOCAB);
        double[] weights = new double[tokens];
        for (int t = 0; t < tokens; t++) {
            weights[t] = mask[t] * lossWeight;
        }
        CrossEntropy.backward(logits, labels, VOCAB, ce.logSumExp(), weights, logits);
        float[] dh = new float[tokens * HIDDEN];
        Gemm.sgemm(false, false, tokens, HIDDEN, VOCAB, 1f, logits, 0, VOCAB, whole.values(), 0, HIDDEN, 0f, dh, 0,
                HIDDEN);
        Gemm.sgemm(true, false, VOCAB, HIDDEN, tokens, 1f, logits, 0, VOCAB, h, 0, HIDDEN, 1f, whole.grads(), 0,
                HIDDEN);

        LossReport report = LossReport.of(ce.loss(), mask);
        assertEquals(report.sum(), loss.report().sum());
        assertEquals(report.count(), loss.report().count());
        for (int t = 0; t < tokens; t++) {
            assertEquals(mask[t] != 0f ? ce.loss()[t] : 0.0, loss.perToken()[t], "token " + t);
        }
        assertArrayEquals(dh, loss.dh());
        assertArrayEquals(whole.grads(), blocked.grads());
    }

    @Test
    void withoutALossWeightThereIsNoBackward() {
        Random random = new Random(8);
        int tokens = 5;
        Parameter w = weight(random);
        float[] grads = w.grads().clone();
        TokenLoss loss = new LmHead(w).loss(normal(random, tokens * HIDDEN), tokens, new int[] {1, 2, 3, 4, 5},
                new float[] {1, 1, 0, 1, 1}, Double.NaN);
        assertNull(loss.dh());
        assertEquals(4, loss.report().count());
        assertArrayEquals(grads, w.grads());
    }

    private static Parameter weight(Random random) {
        Parameter w = Parameter.filled("w", 0f, VOCAB, HIDDEN);
        for (int i = 0; i < w.values().length; i++) {
            w.values()[i] = (float) random.nextGaussian();
            w.grads()[i] = (float) random.nextGaussian(); // the gradient is added to, not overwritten
        }
        return w;
    }

    private static float[] normal(Random random, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) random.nextGaussian();
        }
        return x;
    }
}
