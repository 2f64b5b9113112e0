package io.kdapack.core.loss;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class MaskedCrossEntropyTest {
    private static final float[] LOGITS = {0.5f, -1f, 2f, 0f, 0f, 0f, 3f, 1f, -2f};
    private static final int[] LABELS = {2, 0, 1};
    private static final float[] MASK = {1, 0, 1};

    @Test
    void reportsMaskedSumAndWeightsTheGradient() {
        float[] grad = new float[9];
        MaskedCrossEntropy.Result r = MaskedCrossEntropy.compute(LOGITS, LABELS, MASK, 3, 0.25, grad);

        double[] ce = CrossEntropy.forward(LOGITS, LABELS, 3).loss();
        assertArrayEquals(ce, r.perTokenLoss());
        assertEquals(new LossReport(ce[0] + ce[2], 2), r.report());
        float[] expected = new float[9];
        CrossEntropy.backward(LOGITS, LABELS, 3, CrossEntropy.forward(LOGITS, LABELS, 3).logSumExp(),
                new double[] {0.25, 0, 0.25}, expected);
        assertArrayEquals(expected, grad);
        assertEquals(0f, grad[3] + grad[4] + grad[5], "masked token has no gradient");
    }

    @Test
    void forwardOnlyAndBadMasks() {
        assertEquals(2, MaskedCrossEntropy.compute(LOGITS, LABELS, MASK, 3, 1, null).report().count());
        assertThrows(IllegalArgumentException.class,
                () -> MaskedCrossEntropy.compute(LOGITS, LABELS, new float[] {1, 0.5f, 1}, 3, 1, null));
        assertThrows(IllegalArgumentException.class,
                () -> MaskedCrossEntropy.compute(LOGITS, LABELS, new float[] {1, 0}, 3, 1, null));
    }
}
