package io.kdapack.training.pipeline;

import io.kdapack.config.KdapackConfig;
import io.kdapack.core.optim.NamedParameter;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A copy of a running job's weights at an optimizer-step boundary ({@link StepCompute#snapshotWeights}), for serving
 * its live weights. The copy is taken in one call on the compute thread, between two optimizer steps, so it is never
 * half an update.
 *
 * @param step   optimizer steps the weights have taken
 * @param config the configuration the job trains with (the model to build around the weights)
 * @param values fp32 values by parameter name, in the model's order, each {@code product(shape)} long; null when the
 *               snapshot only says that the weights are still those of {@code step} ({@link #unchanged})
 */
public record WeightSnapshot(long step, KdapackConfig config, Map<String, float[]> values) {

    /** Copies the parameters' values (one copy: {@link #bytes} bytes). */
    public static WeightSnapshot of(long step, KdapackConfig config, List<? extends NamedParameter> parameters) {
        Map<String, float[]> copies = new LinkedHashMap<>();
        for (NamedParameter p : parameters) {
            copies.put(p.name(), p.values().clone());
        }
        return new WeightSnapshot(step, config, Collections.unmodifiableMap(copies));
    }

    /** The weights are still those of {@code step}, which the asker already holds: nothing was copied. */
    public static WeightSnapshot unchanged(long step) {
        return new WeightSnapshot(step, null, null);
    }

    public boolean isUnchanged() {
        return values == null;
    }

    /** Bytes of the copied values (0 for {@link #unchanged}). */
    public long bytes() {
        return values == null ? 0 : values.values().stream().mapToLong(v -> 4L * v.length).sum();
    }

    /**
     * Copies the snapshot into {@code parameters}; names and sizes must match exactly.
     *
     * @throws IllegalArgumentException naming the first parameter that is missing or of another size
     */
    public void restoreInto(List<? extends NamedParameter> parameters) {
        if (values == null) {
            throw new IllegalStateException("an unchanged snapshot (step " + step + ") holds no weights");
        }
        if (parameters.size() != values.size()) {
            throw new IllegalArgumentException("snapshot of step " + step + " holds " + values.size()
                    + " parameters, the model has " + parameters.size());
        }
        for (NamedParameter p : parameters) {
            float[] v = values.get(p.name());
            if (v == null || v.length != p.values().length) {
                throw new IllegalArgumentException("parameter '" + p.name() + "': the snapshot holds "
                        + (v == null ? "no such parameter" : v.length + " values") + ", the model "
                        + p.values().length);
            }
            System.arraycopy(v, 0, p.values(), 0, v.length);
        }
    }
}
