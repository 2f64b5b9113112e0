package io.kdapack.training.checkpoint;

import io.kdapack.core.io.Tensor;
import io.kdapack.core.optim.AdamWState;
import io.kdapack.core.optim.NamedParameter;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything a checkpoint holds: the training position, the fp32 weights by name and the optimizer state.
 *
 * @param state     step, data position, RNG states, config hash
 * @param weights   F32 tensors by parameter name, in the model's order
 * @param optimizer AdamW moments per parameter name and step count
 */
public record Checkpoint(TrainingState state, Map<String, Tensor> weights, AdamWState optimizer) {

    public Checkpoint {
        weights = Collections.unmodifiableMap(new LinkedHashMap<>(weights));
        for (Map.Entry<String, float[]> e : optimizer.expAvg().entrySet()) {
            Tensor w = weights.get(e.getKey());
            if (w == null || w.size() != e.getValue().length) {
                throw new IllegalArgumentException("optimizer state for '" + e.getKey() + "' (" + e.getValue().length
                        + " elements) has no weight of that size (" + (w == null ? "missing" : w.size() + " elements") + ")");
            }
        }
    }

    /** A snapshot (copies) of the parameters' values, with the optimizer's state (e.g. {@code AdamW.state()}). */
    public static Checkpoint of(TrainingState state, List<? extends NamedParameter> parameters, AdamWState optimizer) {
        Map<String, Tensor> weights = new LinkedHashMap<>();
        for (NamedParameter p : parameters) {
            NamedParameter.checkedSize(p);
            long[] shape = Arrays.stream(p.shape()).asLongStream().toArray();
            if (weights.put(p.name(), Tensor.of(p.name(), p.values().clone(), shape)) != null) {
                throw new IllegalArgumentException("parameter '" + p.name() + "' appears twice");
            }
        }
        return new Checkpoint(state, weights, optimizer);
    }

    /**
     * Copies the stored weights into {@code parameters}; the names and shapes must match exactly (a weight missing
     * on either side is an error naming it).
     */
    public void restoreInto(List<? extends NamedParameter> parameters) {
        Set<String> names = new HashSet<>();
        for (NamedParameter p : parameters) {
            names.add(p.name());
            Tensor w = weights.get(p.name());
            if (w == null) {
                throw new IllegalArgumentException("checkpoint has no weight '" + p.name() + "'");
            }
            long[] shape = Arrays.stream(p.shape()).asLongStream().toArray();
            if (!Arrays.equals(shape, w.shape())) {
                throw new IllegalArgumentException("weight '" + p.name() + "': checkpoint shape " + Arrays.toString(w.shape())
                        + ", model shape " + Arrays.toString(shape));
            }
            float[] values = w.toFloatArray();
            System.arraycopy(values, 0, p.values(), 0, values.length);
        }
        for (String name : weights.keySet()) {
            if (!names.contains(name)) {
                throw new IllegalArgumentException("checkpoint weight '" + name + "' is not a parameter of the model");
            }
        }
    }
}
