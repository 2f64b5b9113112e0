package io.kdapack.core.loss;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class LossScalingTest {
    private static final List<LossReport> REPORTS = List.of(new LossReport(6, 3), LossReport.EMPTY, new LossReport(2, 1));

    @Test
    void reportSumsMaskedTokens() {
        LossReport r = LossReport.of(new double[] {1.5, 2, 4, 8}, new float[] {1, 0, 1, 0});
        assertEquals(new LossReport(5.5, 2), r);
        assertEquals(2, LossReport.count(new float[] {1, 0, 1, 0}));
        assertThrows(IllegalArgumentException.class, () -> LossReport.of(new double[] {1}, new float[] {0.5f}));
    }

    @Test
    void emptyMicroBatchGivesZeroNotNaN() {
        LossReport empty = LossReport.of(new double[] {3, 4}, new float[] {0, 0});
        assertEquals(LossReport.EMPTY, empty);
        assertEquals(0.0, empty.mean());
        assertEquals(0.0, LossReport.logged(List.of(empty, empty)));
        assertEquals(0.0, LossScaling.objective(LossMode.PER_MICROBATCH_MEAN, List.of(empty)));
        assertEquals(0.0, LossScaling.objective(LossMode.PER_TOKEN, List.of(empty)));
    }

    @Test
    void perMicroBatchMeanAveragesOverAllMicroBatches() {
        // (6/3 + 0/1 + 2/1) / 3: the empty micro-batch still counts in M.
        assertEquals(4.0 / 3, LossScaling.objective(LossMode.PER_MICROBATCH_MEAN, REPORTS), 1e-15);
        LossScaling s = LossScaling.of(LossMode.PER_MICROBATCH_MEAN, REPORTS);
        assertEquals(1.0 / 9, s.tokenWeight(0), 1e-15);
        assertEquals(1.0 / 3, s.tokenWeight(1), 1e-15);
    }

    @Test
    void perTokenIsGlobalTokenMean() {
        assertEquals(8.0 / 4, LossScaling.objective(LossMode.PER_TOKEN, REPORTS), 1e-15);
        LossScaling s = LossScaling.of(LossMode.PER_TOKEN, REPORTS);
        assertEquals(0.25, s.tokenWeight(2));
        assertEquals(4, s.globalCount());
    }

    @Test
    void loggedLossIsTokenMeanInBothModes() {
        assertEquals(2.0, LossReport.logged(REPORTS));
    }

    @Test
    void mtpWeightScalesByFactorOverDepth() {
        LossScaling mean = LossScaling.of(LossMode.PER_MICROBATCH_MEAN, REPORTS);
        assertEquals(0.3 / 2 / 5 / 3, mean.mtpTokenWeight(0, 5, 0.3, 2), 1e-15);
        assertEquals(0.1 / 1 / 3, mean.mtpTokenWeight(1, 0, 0.1, 1), 1e-15);
        LossScaling perToken = LossScaling.of(LossMode.PER_TOKEN, REPORTS);
        assertEquals(0.3 / 2 / 4, perToken.mtpTokenWeight(0, 5, 0.3, 2), 1e-15);
        assertThrows(IllegalArgumentException.class, () -> mean.mtpTokenWeight(0, 1, 0.1, 0));
    }

    @Test
    void tokenWeightsFollowTheMask() {
        double[] w = LossScaling.of(LossMode.PER_MICROBATCH_MEAN, new long[] {2}).tokenWeights(0, new float[] {1, 0, 1});
        assertEquals(0.5, w[0]);
        assertEquals(0.0, w[1]);
        assertEquals(0.5, w[2]);
    }

    @Test
    void rejectsMisuse() {
        assertThrows(IllegalArgumentException.class, () -> LossScaling.of(LossMode.PER_TOKEN, new long[0]));
        assertThrows(IllegalArgumentException.class, () -> LossScaling.of(LossMode.PER_TOKEN, new long[] {-1}));
        LossScaling s = LossScaling.of(LossMode.PER_TOKEN, new long[] {1, 2});
        assertThrows(IllegalArgumentException.class, () -> s.tokenWeight(2));
        assertThrows(IllegalArgumentException.class, () -> s.objective(List.of(new LossReport(1, 1))));
        assertThrows(IllegalArgumentException.class, () -> s.objective(List.of(new LossReport(1, 1), new LossReport(1, 1))));
    }
}
