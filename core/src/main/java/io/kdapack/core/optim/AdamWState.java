package io.kdapack.core.optim;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The state of {@link AdamW}: steps taken and the two moments per parameter name, fp32 as PyTorch keeps them.
 *
 * @param step     optimizer steps taken (the bias corrections of the next step use {@code step + 1})
 * @param expAvg   first moment per parameter name
 * @param expAvgSq second moment per parameter name
 */
public record AdamWState(long step, Map<String, float[]> expAvg, Map<String, float[]> expAvgSq) {

    public AdamWState {
        if (step < 0) {
            throw new IllegalArgumentException("step must be >= 0, got " + step);
        }
        if (!expAvg.keySet().equals(expAvgSq.keySet())) {
            throw new IllegalArgumentException("expAvg and expAvgSq name different parameters: " + expAvg.keySet()
                    + " vs " + expAvgSq.keySet());
        }
        for (Map.Entry<String, float[]> e : expAvg.entrySet()) {
            int squares = expAvgSq.get(e.getKey()).length;
            if (e.getValue().length != squares) {
                throw new IllegalArgumentException("parameter '" + e.getKey() + "': expAvg has " + e.getValue().length
                        + " elements, expAvgSq " + squares);
            }
        }
        expAvg = Collections.unmodifiableMap(new LinkedHashMap<>(expAvg));
        expAvgSq = Collections.unmodifiableMap(new LinkedHashMap<>(expAvgSq));
    }
}
