package io.kdapack.core.loss;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import org.junit.jupiter.api.Test;

/** {@code kdapack op loss}'s input checks: the micro-batch layout metadata must be integers > 0. */
class LossOpTest {

    /** One sample of two tokens over a vocabulary of three, with the given layout metadata. */
    private static SafeTensors lossCase(String microBatchSize, String numMicroBatches) {
        return SafeTensors.builder()
                .put(Tensor.of("logits", new float[6], 1, 2, 3))
                .put(Tensor.of("labels", new int[] {0, 1}, 1, 2))
                .put(Tensor.of("loss_mask", new float[] {1, 1}, 1, 2))
                .meta("micro_batch_size", microBatchSize)
                .meta("num_microbatches", numMicroBatches)
                .build();
    }

    @Test
    void aLayoutOfZeroOrNotANumberIsRefusedByName() {
        assertEquals("metadata 'micro_batch_size' = '0', expected an integer > 0",
                assertThrows(IllegalArgumentException.class, () -> LossOp.run(lossCase("0", "1"))).getMessage());
        assertEquals("metadata 'num_microbatches' = 'two', expected an integer > 0",
                assertThrows(IllegalArgumentException.class, () -> LossOp.run(lossCase("1", "two"))).getMessage());
        assertEquals("micro-batch layout: micro_batch_size 1 × num_microbatches 2 != 1 samples in logits",
                assertThrows(IllegalArgumentException.class, () -> LossOp.run(lossCase("1", "2"))).getMessage());
    }
}
