package io.kdapack.inference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SamplerTest {
    private static final float[] LOGITS = {1.0f, 3.0f, 0.5f, 3.0f, -2.0f, 2.0f};

    @Test
    void greedyTakesTheArgMaxAndTheLowestIdOnTies() {
        Sampler greedy = new Sampler(SamplingParams.greedy(1));
        assertEquals(1, greedy.next(LOGITS, 0, LOGITS.length));
        assertEquals(5, greedy.next(new float[] {9, 9, 0, 1, 2, 3, 4, 5}, 2, 6));
    }

    @Test
    void temperatureSamplingFollowsTheSoftmaxOfTheScaledLogits() {
        int draws = 60_000;
        double temperature = 0.8;
        int[] counts = counts(new SamplingParams(1, temperature, 0, 1, 42, List.of()), draws);
        double[] p = softmax(LOGITS, temperature);
        for (int i = 0; i < LOGITS.length; i++) {
            // Binomial standard deviation of a frequency is sqrt(p(1−p)/n) ≤ 0.002 here; 5σ.
            double sigma = Math.sqrt(p[i] * (1 - p[i]) / draws);
            assertEquals(p[i], counts[i] / (double) draws, 5 * sigma + 1e-9, "token " + i);
        }
    }

    @Test
    void topKKeepsTheKMostLikelyAndTopPTheSmallestNucleus() {
        int[] topK = counts(new SamplingParams(1, 1, 2, 1, 7, List.of()), 5000);
        assertEquals(5000, topK[1] + topK[3], "top-2 keeps ids 1 and 3 (equal logits 3.0)");
        // Probabilities at temperature 1, sorted: ids 1, 3 (0.386 each), 5 (0.142), 0 (0.052), …; top_p 0.8
        // needs ids 1, 3 and 5 (0.772 < 0.8 ≤ 0.914).
        int[] topP = counts(new SamplingParams(1, 1, 0, 0.8, 7, List.of()), 5000);
        assertEquals(5000, topP[1] + topP[3] + topP[5]);
        assertTrue(topP[5] > 0);
        int[] tight = counts(new SamplingParams(1, 1, 0, 0.3, 7, List.of()), 500);
        assertEquals(500, tight[1], "the nucleus of 0.3 is the single most likely id (lowest id on the tie)");
    }

    @Test
    void theSameSeedGivesTheSameDrawsAndAnotherSeedOthers() {
        SamplingParams params = new SamplingParams(1, 1.5, 0, 1, 123, List.of());
        int[] a = draws(new Sampler(params), 200);
        int[] b = draws(new Sampler(params), 200);
        int[] c = draws(new Sampler(new SamplingParams(1, 1.5, 0, 1, 124, List.of())), 200);
        assertArrayEquals(a, b);
        assertTrue(!Arrays.equals(a, c));
    }

    @Test
    void logProbabilityIsTheLogSoftmaxAtTemperatureOne() {
        double[] p = softmax(LOGITS, 1);
        double total = 0;
        for (int i = 0; i < LOGITS.length; i++) {
            double lp = Sampler.logProbability(LOGITS, 0, LOGITS.length, i);
            assertEquals(Math.log(p[i]), lp, 1e-12);
            total += Math.exp(lp);
        }
        assertEquals(1.0, total, 1e-12);
    }

    @Test
    void topGivesTheMostLikelyIdsInOrderWithTheLowestIdFirstOnTiesAndTheirLogProbabilities() {
        // LOGITS: ids 1 and 3 tie at 3.0, then 5 (2.0), 0 (1.0), 2 (0.5), 4 (-2.0). Offset 2 into a padded row checks
        // that the row is read where it lies.
        float[] row = new float[LOGITS.length + 3];
        System.arraycopy(LOGITS, 0, row, 2, LOGITS.length);
        row[0] = 99f;
        row[row.length - 1] = 99f;
        int[][] expected = {{1}, {1, 3}, {1, 3, 5}, {1, 3, 5, 0}, {1, 3, 5, 0, 2}, {1, 3, 5, 0, 2, 4}};
        for (int count = 1; count <= 7; count++) {
            Sampler.Alternatives top = Sampler.top(row, 2, LOGITS.length, count);
            assertArrayEquals(expected[Math.min(count, LOGITS.length) - 1], top.ids(), "count " + count);
            for (int i = 0; i < top.ids().length; i++) {
                assertEquals(Sampler.logProbability(row, 2, LOGITS.length, top.ids()[i]), top.logprobs()[i],
                        "the alternative's ln p is the chosen token's, bit for bit");
            }
        }
        assertEquals(0, Sampler.top(row, 2, LOGITS.length, 0).ids().length);
    }

    @Test
    void topAgreesWithSortingTheWholeRowOnRandomRowsWithTies() {
        SplittableRandom random = new SplittableRandom(11);
        for (int trial = 0; trial < 200; trial++) {
            int vocab = 1 + random.nextInt(40);
            float[] row = new float[vocab];
            for (int i = 0; i < vocab; i++) {
                row[i] = random.nextInt(8) - 4; // few distinct values: many ties
            }
            Integer[] order = new Integer[vocab];
            for (int i = 0; i < vocab; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> row[a] != row[b] ? Float.compare(row[b], row[a]) : a - b);
            int count = 1 + random.nextInt(SamplingParams.MAX_TOP_LOGPROBS);
            int[] want = Arrays.stream(order).limit(count).mapToInt(Integer::intValue).toArray();
            assertArrayEquals(want, Sampler.top(row, 0, vocab, count).ids(), "trial " + trial);
        }
    }

    private static int[] counts(SamplingParams params, int n) {
        Sampler sampler = new Sampler(params);
        int[] counts = new int[LOGITS.length];
        for (int i = 0; i < n; i++) {
            counts[sampler.next(LOGITS, 0, LOGITS.length)]++;
        }
        return counts;
    }

    private static int[] draws(Sampler sampler, int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = sampler.next(LOGITS, 0, LOGITS.length);
        }
        return out;
    }

    private static double[] softmax(float[] logits, double temperature) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double[] p = new double[logits.length];
        double sum = 0;
        for (int i = 0; i < logits.length; i++) {
            p[i] = Math.exp((logits[i] - max) / temperature);
            sum += p[i];
        }
        for (int i = 0; i < p.length; i++) {
            p[i] /= sum;
        }
        return p;
    }
}
