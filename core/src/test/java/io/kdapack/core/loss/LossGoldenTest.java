package io.kdapack.core.loss;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.testkit.Golden;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The loss against Megatron's golden vectors (golden/megatron/README.md §6), every loss file. Tolerance 1e-6
 * relative: the float64 references differ from our double-accumulated CE of the same fp32 logits only by
 * rounding (~1e-15), and the gradients are stored as fp32 (~6e-8 relative).
 */
class LossGoldenTest {
    private static final double TOLERANCE = 1e-6;
    private static final String[] FLOAT_OUTPUTS = {"per_token_loss", "microbatch_loss_sum", "loss_per_microbatch_mean",
        "loss_per_token", "lm_loss_logged", "loss_per_microbatch_mean_with_empty_microbatch",
        "grad_logits_per_microbatch_mean", "grad_logits_per_token"};

    @ParameterizedTest
    @ValueSource(strings = {"loss_L32_s1234_plain", "loss_L32_s7_all_flags", "loss_L64_s1234_valid_pad_eodmask"})
    void matchesMegatronGolden(String name) throws Exception {
        SafeTensors golden = SafeTensors.read(Golden.path("megatron/v100_loss/" + name + ".safetensors"));
        SafeTensors out = LossOp.run(golden);

        assertArrayEquals(golden.get("microbatch_num_tokens").toLongArray(), out.get("microbatch_num_tokens").toLongArray());
        for (String tensor : FLOAT_OUTPUTS) {
            assertArrayEquals(golden.get(tensor).shape(), out.get(tensor).shape(), tensor);
            double err = relativeError(out.get(tensor).toDoubleArray(), golden.get(tensor).toDoubleArray());
            assertTrue(err <= TOLERANCE, name + " " + tensor + ": relative error " + err);
        }
        // Megatron's own fp32 results agree with ours to fp32 round-off (README: ~4e-8).
        assertTrue(relativeError(out.get("per_token_loss").toDoubleArray(),
                golden.get("per_token_loss_megatron_f32").toDoubleArray()) <= TOLERANCE);
        assertTrue(relativeError(out.get("lm_loss_logged").toDoubleArray(),
                golden.get("lm_loss_logged_megatron_f32").toDoubleArray()) <= TOLERANCE);
    }

    /** ‖out − ref‖ / ‖ref‖ (absolute when ref is all zero). */
    static double relativeError(double[] out, double[] ref) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < ref.length; i++) {
            diff += (out[i] - ref[i]) * (out[i] - ref[i]);
            norm += ref[i] * ref[i];
        }
        return norm == 0 ? Math.sqrt(diff) : Math.sqrt(diff / norm);
    }
}
