package io.kdapack.core.optim;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * AdamW with decoupled weight decay and bias correction, with PyTorch's {@code torch.optim.AdamW} arithmetic
 * (which Megatron's fused Adam in AdamW mode shares). For each element, at step {@code t} (1 for the first step):
 * <pre>
 *   p ← p · (1 − lr·wd)                      (wd = 0 for parameters {@link WeightDecayRule} exempts)
 *   m ← β1·m + (1 − β1)·g
 *   v ← β2·v + (1 − β2)·g²
 *   p ← p − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + eps)
 * </pre>
 * The parameters' fp32 values are the master weights; the moments are kept in fp32, each element's update is
 * computed in double and rounded once, so a step is deterministic and independent of threading: the elements are
 * updated in parallel blocks in the fork-join pool of the calling task (or the common pool). Moments start at zero
 * the first time a parameter name is seen.
 */
public final class AdamW {
    private final AdamWOptions options;
    private final Map<String, float[]> expAvg = new LinkedHashMap<>();
    private final Map<String, float[]> expAvgSq = new LinkedHashMap<>();
    private long step;

    public AdamW(AdamWOptions options) {
        if (options == null) {
            throw new IllegalArgumentException("options must not be null");
        }
        this.options = options;
    }

    /** An optimizer that continues from {@code state} (e.g. read from a checkpoint). */
    public static AdamW restore(AdamWOptions options, AdamWState state) {
        AdamW adam = new AdamW(options);
        adam.step = state.step();
        state.expAvg().forEach((name, m) -> adam.expAvg.put(name, m.clone()));
        state.expAvgSq().forEach((name, v) -> adam.expAvgSq.put(name, v.clone()));
        return adam;
    }

    public AdamWOptions options() {
        return options;
    }

    /** Steps taken so far. */
    public long steps() {
        return step;
    }

    /** A copy of the state. */
    public AdamWState state() {
        Map<String, float[]> m = new LinkedHashMap<>();
        Map<String, float[]> v = new LinkedHashMap<>();
        expAvg.forEach((name, a) -> m.put(name, a.clone()));
        expAvgSq.forEach((name, a) -> v.put(name, a.clone()));
        return new AdamWState(step, m, v);
    }

    /**
     * One update of every parameter from its {@link NamedParameter#grads()} at learning rate {@code lr}.
     * The gradients are read, not cleared.
     */
    public void step(List<? extends NamedParameter> parameters, double lr) {
        if (!(lr >= 0) || !Double.isFinite(lr)) {
            throw new IllegalArgumentException("lr must be a finite number >= 0, got " + lr);
        }
        Set<String> seen = new HashSet<>();
        for (NamedParameter p : parameters) {
            int n = NamedParameter.checkedSize(p);
            if (!seen.add(p.name())) {
                throw new IllegalArgumentException("parameter '" + p.name() + "' appears twice");
            }
            float[] m = expAvg.computeIfAbsent(p.name(), k -> new float[n]);
            if (m.length != n) {
                throw new IllegalArgumentException("parameter '" + p.name() + "': " + n + " elements, optimizer state has "
                        + m.length);
            }
            expAvgSq.computeIfAbsent(p.name(), k -> new float[n]);
        }
        step++;
        double beta1 = options.beta1();
        double beta2 = options.beta2();
        double stepSize = lr / (1 - Math.pow(beta1, step));
        double bias2Sqrt = Math.sqrt(1 - Math.pow(beta2, step));
        // Element-wise, so the blocks run in parallel (ElementBlocks); each element's arithmetic is the same.
        ElementBlocks.forEach(parameters, (p, from, to) -> {
            double decay = WeightDecayRule.appliesTo(p.name()) ? 1 - lr * options.weightDecay() : 1;
            update(p.values(), p.grads(), expAvg.get(p.name()), expAvgSq.get(p.name()), from, to, decay, stepSize,
                    bias2Sqrt);
        });
    }

    /** The update of elements {@code [from, to)} of one parameter. */
    private void update(float[] values, float[] grads, float[] m, float[] v, int from, int to, double decay,
                        double stepSize, double bias2Sqrt) {
        double beta1 = options.beta1();
        double beta2 = options.beta2();
        for (int i = from; i < to; i++) {
            double g = grads[i];
            double mi = beta1 * m[i] + (1 - beta1) * g;
            double vi = beta2 * v[i] + (1 - beta2) * g * g;
            m[i] = (float) mi;
            v[i] = (float) vi;
            double denom = Math.sqrt(vi) / bias2Sqrt + options.eps();
            values[i] = (float) (values[i] * decay - stepSize * mi / denom);
        }
    }
}
