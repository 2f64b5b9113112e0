package io.kdapack.training.pipeline;

import io.kdapack.core.loss.LossReport;
import java.util.List;

/**
 * The loss of one packed batch under the current weights (no gradient).
 *
 * @param total    Σ over the batch
 * @param segments one entry per segment, in row-major order of their first token
 */
public record BatchLoss(LossReport total, List<LossReport> segments) {

    public BatchLoss {
        segments = List.copyOf(segments);
    }
}
