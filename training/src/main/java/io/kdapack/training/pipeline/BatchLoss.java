package io.kdapack.training.pipeline;

import io.kdapack.core.loss.LossReport;
import java.util.List;

/**
 * The loss of one packed batch under the current weights (no gradient).
 *
 * @param total    Σ over the batch
 * @param segments    one entry per segment, in row-major order of their first token
 * @param weightsStep     the optimizer steps applied to the weights that scored it (its first rows, when it was scored
 *                        in pieces between training steps); -1 unknown
 * @param weightsLastStep the same for its last rows (equal to {@code weightsStep} unless a training step came between
 *                        its pieces); -1 unknown
 */
public record BatchLoss(LossReport total, List<LossReport> segments, long weightsStep, long weightsLastStep) {

    public BatchLoss {
        segments = List.copyOf(segments);
    }

    /** A loss whose weights' step is not known (yet): the model stage stamps it ({@link #atStep}). */
    public BatchLoss(LossReport total, List<LossReport> segments) {
        this(total, segments, -1, -1);
    }
}
