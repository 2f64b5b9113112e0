package io.kdapack.core.nn;

import io.kdapack.core.linalg.Workspace;
import java.util.List;

/**
 * {@code y = x·Wᵀ + b}: {@code x [T,in]}, {@code weight [out,in]} (PyTorch layout), optional {@code bias [out]},
 * {@code y [T,out]}. Parameters {@code <name>.weight} and {@code <name>.bias}.
 */
public final class Linear implements Layer {
    private final int inFeatures;
    private final int outFeatures;
    private final Parameter weight;
    private final Parameter bias;

    /** What backward needs: the input. */
    public record Saved(int tokens, float[] input, float[] output) {
    }

    public Linear(String name, int inFeatures, int outFeatures, boolean hasBias) {
        if (inFeatures < 1 || outFeatures < 1) {
            throw new IllegalArgumentException("linear '" + name + "': features must be >= 1, got in=" + inFeatures
                    + " out=" + outFeatures);
        }
        this.inFeatures = inFeatures;
        this.outFeatures = outFeatures;
        this.weight = Parameter.filled(Parameter.join(name, "weight"), 0f, outFeatures, inFeatures);
        this.bias = hasBias ? Parameter.filled(Parameter.join(name, "bias"), 0f, outFeatures) : null;
    }

    public int inFeatures() {
        return inFeatures;
    }

    public int outFeatures() {
        return outFeatures;
    }

    public Parameter weight() {
        return weight;
    }

    /** The bias, or null. */
    public Parameter bias() {
        return bias;
    }

    @Override
    public List<Parameter> parameters() {
        return bias == null ? List.of(weight) : List.of(weight, bias);
    }

    /** {@code y [T,out]} for {@code x [T,in]}. */
    public Saved forward(float[] x, int tokens) {
        Shapes.check(weight.name() + " input", x, tokens, inFeatures);
        float[] y = Workspace.floats(tokens * outFeatures); // the product overwrites it
        Parallel.gemm(false, true, tokens, outFeatures, inFeatures, 1f, x, 0, inFeatures, weight.values(), 0, inFeatures,
                0f, y, 0, outFeatures);
        if (bias != null) {
            Parallel.forBlocks(tokens, 64, (from, to) -> {
                for (int t = from; t < to; t++) {
                    for (int o = 0; o < outFeatures; o++) {
                        y[t * outFeatures + o] += bias.values()[o];
                    }
                }
            });
        }
        return new Saved(tokens, x, y);
    }

    /** Returns {@code dx [T,in]}; adds {@code dyᵀ·x} to the weight gradient and {@code Σ_t dy} to the bias gradient. */
    public float[] backward(Saved saved, float[] dy) {
        int tokens = saved.tokens();
        Shapes.check(weight.name() + " output gradient", dy, tokens, outFeatures);
        float[] dx = Workspace.floats(tokens * inFeatures); // the product overwrites it
        Parallel.gemm(false, false, tokens, inFeatures, outFeatures, 1f, dy, 0, outFeatures, weight.values(), 0,
                inFeatures, 0f, dx, 0, inFeatures);
        Parallel.gemm(true, false, outFeatures, inFeatures, tokens, 1f, dy, 0, outFeatures, saved.input(), 0, inFeatures,
                1f, weight.grads(), 0, inFeatures);
        if (bias != null) {
            Parallel.forBlocks(outFeatures, 64, (from, to) -> {
                // Token by token, so the reads run along rows; each feature still sums its tokens in order.
                float[] sums = new float[to - from];
                for (int t = 0; t < tokens; t++) {
                    for (int o = from; o < to; o++) {
                        sums[o - from] += dy[t * outFeatures + o];
                    }
                }
                for (int o = from; o < to; o++) {
                    bias.grads()[o] += sums[o - from];
                }
            });
        }
        return dx;
    }
}
