package io.kdapack.core.loss;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class CrossEntropyTest {

    @Test
    void uniformLogitsGiveLogVocab() {
        CrossEntropy.Result r = CrossEntropy.forward(new float[] {3f, 3f, 3f, 3f, 3f, 3f, 3f, 3f}, new int[] {0, 3}, 4);
        assertEquals(Math.log(4), r.loss()[0], 1e-15);
        assertEquals(Math.log(4), r.loss()[1], 1e-15);
    }

    /**
     * The vectorised passes against a float64 reference with {@code Math.exp}: the loss to 1e-14 relative (double
     * exponentials within 2 ulp, partial sums of 16), the gradient to 1e-6 relative (fp32 softmax, about 3 ulp).
     */
    @Test
    void matchesFloat64ReferenceOnLargeVocabularies() {
        Random random = new Random(11);
        for (int vocab : new int[] {5, 16, 1007, 4099}) {
            int tokens = 3;
            float[] logits = new float[tokens * vocab];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) (random.nextGaussian() * 4);
            }
            int[] labels = {0, vocab - 1, vocab / 2};
            double[] weights = {0.5, 1, 2};
            CrossEntropy.Result r = CrossEntropy.forward(logits, labels, vocab);
            float[] grad = new float[logits.length];
            CrossEntropy.backward(logits, labels, vocab, r.logSumExp(), weights, grad);
            double diff = 0, norm = 0;
            for (int t = 0; t < tokens; t++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int v = 0; v < vocab; v++) {
                    max = Math.max(max, logits[t * vocab + v]);
                }
                double sum = 0;
                for (int v = 0; v < vocab; v++) {
                    sum += Math.exp(logits[t * vocab + v] - max);
                }
                double lse = Math.log(sum) + max;
                double loss = lse - logits[t * vocab + labels[t]];
                assertEquals(loss, r.loss()[t], 1e-14 * Math.abs(loss), "vocab " + vocab + " token " + t);
                for (int v = 0; v < vocab; v++) {
                    double g = weights[t] * (Math.exp(logits[t * vocab + v] - lse) - (v == labels[t] ? 1 : 0));
                    diff += (grad[t * vocab + v] - g) * (grad[t * vocab + v] - g);
                    norm += g * g;
                }
            }
            assertTrue(Math.sqrt(diff / norm) < 1e-6, "vocab " + vocab + " gradient rel " + Math.sqrt(diff / norm));
        }
    }

    /** The gradient written over the logits themselves is bitwise the one written to a separate buffer. */
    @Test
    void backwardInPlaceEqualsBackwardIntoAnotherBuffer() {
        Random random = new Random(12);
        int tokens = 4;
        int vocab = 53;
        float[] logits = new float[tokens * vocab];
        for (int i = 0; i < logits.length; i++) {
            logits[i] = (float) random.nextGaussian();
        }
        int[] labels = {3, 0, 52, 17};
        double[] weights = {1, 0, 0.5, 2};
        CrossEntropy.Result r = CrossEntropy.forward(logits, labels, vocab);
        float[] separate = new float[logits.length];
        CrossEntropy.backward(logits, labels, vocab, r.logSumExp(), weights, separate);
        float[] inPlace = logits.clone();
        CrossEntropy.backward(inPlace, labels, vocab, r.logSumExp(), weights, inPlace);
        assertArrayEquals(separate, inPlace);
    }

    /**
     * Forward and backward at once (the LM head's path): the loss, log-sum-exp and gradient (in place, rows of weight 0
     * included) bitwise those of forward then backward, for a range of rows.
     */
    @Test
    void forwardBackwardGivesTheBitsOfForwardThenBackward() {
        Random random = new Random(13);
        int tokens = 6;
        int vocab = 1000;
        float[] logits = new float[tokens * vocab];
        for (int i = 0; i < logits.length; i++) {
            logits[i] = (float) (3 * random.nextGaussian());
        }
        int[] labels = {3, 0, 999, 17, 500, 1};
        double[] weights = {1, 0, 0.5, 2, 0.25, 1};
        CrossEntropy.Result expected = CrossEntropy.forward(logits, labels, vocab);
        float[] gradient = new float[logits.length];
        CrossEntropy.backward(logits, labels, vocab, expected.logSumExp(), weights, gradient);
        CrossEntropy.Result actual = new CrossEntropy.Result(new double[tokens], new double[tokens]);
        float[] inPlace = logits.clone();
        CrossEntropy.forwardBackward(inPlace, labels, vocab, weights, actual, inPlace, 0, 2);
        CrossEntropy.forwardBackward(inPlace, labels, vocab, weights, actual, inPlace, 2, tokens);
        assertArrayEquals(expected.loss(), actual.loss());
        assertArrayEquals(expected.logSumExp(), actual.logSumExp());
        assertArrayEquals(gradient, inPlace);
    }

    @Test
    void largeLogitsStayFinite() {
        // exp(1e4) overflows in any precision; the max shift keeps the sum in range.
        float[] logits = {1e4f, 1e4f - 2f, -1e4f};
        double loss = CrossEntropy.forward(logits, new int[] {1}, 3).loss()[0];
        assertEquals(2 + Math.log1p(Math.exp(-2)), loss, 1e-12);
    }

    @Test
    void gradientMatchesFiniteDifferences() {
        int tokens = 5;
        int vocab = 7;
        Random random = new Random(42);
        float[] logits = new float[tokens * vocab];
        for (int i = 0; i < logits.length; i++) {
            logits[i] = (float) (random.nextGaussian() * 2);
        }
        int[] labels = {0, 6, 3, 3, 1};
        double[] weights = {0.5, 0, 1.25, -0.3, 2};
        CrossEntropy.Result r = CrossEntropy.forward(logits, labels, vocab);
        float[] grad = new float[logits.length];
        CrossEntropy.backward(logits, labels, vocab, r.logSumExp(), weights, grad);

        double diff = 0;
        double norm = 0;
        for (int i = 0; i < logits.length; i++) {
            float saved = logits[i];
            logits[i] = saved + 1e-2f;
            float up = logits[i];
            double plus = objective(logits, labels, vocab, weights);
            logits[i] = saved - 1e-2f;
            float down = logits[i];
            double minus = objective(logits, labels, vocab, weights);
            logits[i] = saved;
            // Divide by the step actually taken in float, not by the nominal 2e-2.
            double numeric = (plus - minus) / ((double) up - down);
            diff += (numeric - grad[i]) * (numeric - grad[i]);
            norm += numeric * numeric;
        }
        // Central differences with h = 1e-2 carry an O(h²) truncation error of ~1e-5 relative.
        assertTrue(Math.sqrt(diff / norm) < 1e-4, "relative error " + Math.sqrt(diff / norm));
        for (int v = 0; v < vocab; v++) {
            assertEquals(0f, grad[vocab + v], "weight 0 gives a zero row");
        }
    }

    @Test
    void gradientRowsSumToZero() {
        float[] logits = {0.1f, -2f, 3f, 0.5f};
        float[] grad = new float[4];
        CrossEntropy.backward(logits, new int[] {2}, 4, CrossEntropy.forward(logits, new int[] {2}, 4).logSumExp(),
                new double[] {1}, grad);
        assertEquals(0, grad[0] + grad[1] + grad[2] + grad[3], 1e-6);
        assertTrue(grad[2] < 0);
    }

    @Test
    void rangesGiveTheSameBitsAsTheWhole() {
        int tokens = 7;
        int vocab = 5;
        Random random = new Random(3);
        float[] logits = new float[tokens * vocab];
        for (int i = 0; i < logits.length; i++) {
            logits[i] = (float) random.nextGaussian();
        }
        int[] labels = {4, 0, 1, 2, 3, 4, 0};
        double[] weights = {1, 2, 3, 0, 5, 6, 7};
        CrossEntropy.Result whole = CrossEntropy.forward(logits, labels, vocab);
        float[] wholeGrad = new float[logits.length];
        CrossEntropy.backward(logits, labels, vocab, whole.logSumExp(), weights, wholeGrad);

        CrossEntropy.Result parts = new CrossEntropy.Result(new double[tokens], new double[tokens]);
        float[] partGrad = new float[logits.length];
        for (int[] range : new int[][] {{0, 3}, {3, 3}, {3, 7}}) {
            CrossEntropy.forward(logits, labels, vocab, range[0], range[1], parts);
            CrossEntropy.backward(logits, labels, vocab, parts.logSumExp(), weights, partGrad, range[0], range[1]);
        }
        assertArrayEquals(whole.loss(), parts.loss());
        assertArrayEquals(wholeGrad, partGrad);
        assertThrows(IllegalArgumentException.class, () -> CrossEntropy.forward(logits, labels, vocab, 5, 8, parts));
    }

    @Test
    void rejectsBadInput() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CrossEntropy.forward(new float[4], new int[] {0, 2}, 2));
        assertTrue(e.getMessage().contains("label 2 at token 1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CrossEntropy.forward(new float[5], new int[] {0, 1}, 2));
        assertTrue(e.getMessage().startsWith("logits: 5 values"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> CrossEntropy.forward(new float[] {Float.NaN, 1f}, new int[] {0}, 2));
        assertTrue(e.getMessage().contains("row 0"), e.getMessage());
    }

    /**
     * The gradient buffer is overwritten, not added to: a reused buffer full of NaN comes back with zero rows for the
     * tokens of weight 0 and the softmax rows elsewhere (PIT survivor: the zero fill of masked rows removed).
     */
    @Test
    void backwardOverwritesAReusedBufferMaskedRowsIncluded() {
        float[] logits = {0.5f, -1f, 2f, 1f, 1f, 1f};
        int[] labels = {2, 0};
        CrossEntropy.Result r = CrossEntropy.forward(logits, labels, 3);
        float[] grad = new float[6];
        java.util.Arrays.fill(grad, Float.NaN);
        CrossEntropy.backward(logits, labels, 3, r.logSumExp(), new double[] {0, 0.5}, grad);
        assertArrayEquals(new float[] {0, 0, 0}, java.util.Arrays.copyOfRange(grad, 0, 3), "weight 0: a zero row");
        // Uniform logits: softmax 1/3 each; the label's entry minus 1; all times the weight ½.
        assertArrayEquals(new float[] {(float) (0.5 * (1.0 / 3 - 1)), (float) (0.5 / 3), (float) (0.5 / 3)},
                java.util.Arrays.copyOfRange(grad, 3, 6), 1e-7f);
    }

    /** Every argument of the wrong length or range is refused by name with the numbers (PIT survivors). */
    @Test
    void rejectsBadShapesNamingTheArgument() {
        float[] logits = new float[12];
        int[] labels = {0, 1, 2};
        double[] lse = new double[3];
        assertMessage("vocab must be > 0, got 0", () -> CrossEntropy.forward(new float[0], new int[0], 0));
        assertMessage("logits: 11 values, expected T·V = 3·4 = 12", () -> CrossEntropy.forward(new float[11], labels, 4));
        assertMessage("loss: length 2, expected 3", () -> CrossEntropy.forward(logits, labels, 4, 0, 3,
                new CrossEntropy.Result(new double[2], new double[3])));
        assertMessage("logSumExp: length 4, expected 3", () -> CrossEntropy.forward(logits, labels, 4, 0, 3,
                new CrossEntropy.Result(new double[3], new double[4])));
        assertMessage("token range [0, 4) outside [0, 3)", () -> CrossEntropy.backward(logits, labels, 4, lse,
                new double[3], new float[12], 0, 4));
        assertMessage("logSumExp: length 2, expected 3", () -> CrossEntropy.backward(logits, labels, 4, new double[2],
                new double[3], new float[12]));
        assertMessage("tokenWeights: length 4, expected 3", () -> CrossEntropy.backward(logits, labels, 4, lse,
                new double[4], new float[12]));
        assertMessage("gradLogits: length 11, expected 12", () -> CrossEntropy.backward(logits, labels, 4, lse,
                new double[3], new float[11]));
    }

    private static void assertMessage(String expected, Runnable action) {
        assertEquals(expected, assertThrows(IllegalArgumentException.class, action::run).getMessage());
    }

    private static double objective(float[] logits, int[] labels, int vocab, double[] weights) {
        double[] loss = CrossEntropy.forward(logits, labels, vocab).loss();
        double total = 0;
        for (int t = 0; t < loss.length; t++) {
            total += weights[t] * loss[t];
        }
        return total;
    }
}
