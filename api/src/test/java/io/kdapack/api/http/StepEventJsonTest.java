package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kdapack.actors.events.StepEvent;
import org.junit.jupiter.api.Test;

/**
 * The wire form of step events: {@code val_loss}/{@code val_mtp_loss} only on steps followed by an evaluation,
 * {@code exchange_bytes}/{@code exchange_s} only on a data-parallel job's steps.
 */
class StepEventJsonTest {

    @Test
    void validationFieldsOnlyAfterAnEvaluation() {
        assertEquals("{\"step\":3,\"loss\":2.5,\"mtp_loss\":null,\"tokens\":64,\"segments\":3,\"grad_norm\":0.5,"
                + "\"lr\":0.001,\"tokens_per_s\":1000.0}", SseFrames.stepJson(new StepEvent(3, 2.5, null, 64, 3, 0.5, 1e-3,
                1000)));
        assertEquals("{\"step\":4,\"loss\":2.5,\"mtp_loss\":2.75,\"tokens\":64,\"segments\":3,\"grad_norm\":0.5,"
                + "\"lr\":0.001,\"tokens_per_s\":1000.0,\"val_loss\":2.25,\"val_mtp_loss\":2.5}",
                SseFrames.stepJson(new StepEvent(4, 2.5, 2.75, 64, 3, 0.5, 1e-3, 1000, 2.25, 2.5)));
    }

    @Test
    void exchangeFieldsOnlyForADataParallelStep() {
        assertEquals("{\"step\":5,\"loss\":2.5,\"mtp_loss\":null,\"tokens\":64,\"segments\":3,\"grad_norm\":0.5,"
                + "\"lr\":0.001,\"tokens_per_s\":1000.0,\"exchange_bytes\":65536,\"exchange_s\":0.125}",
                SseFrames.stepJson(new StepEvent(5, 2.5, null, 64, 3, 0.5, 1e-3, 1000, null, null, 65_536L, 0.125)));
    }
}
