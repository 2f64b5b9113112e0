package io.kdapack.core.nn;

import io.kdapack.core.linalg.Workspace;
import java.util.List;

/**
 * KDA's output norm ({@code o_norm}, FLA {@code FusedRMSNormGated} with a sigmoid gate): RMSNorm of each head's
 * {@code V} values with one {@code weight [V]} shared by all heads, times {@code sigmoid(gate)}:
 * {@code y[t,h,:] = weight ⊙ x[t,h,:] / sqrt(mean(x[t,h,:]²) + eps) ⊙ sigmoid(gate[t,h,:])}.
 * {@code x, gate, y [T,HV·V]} (heads contiguous). Parameter {@code <name>.weight}.
 */
public final class GatedRmsNorm implements Layer {
    private final int heads;
    private final int headDim;
    private final RmsNorm norm;

    /** What backward needs: the norm's saved state, the gate's sigmoid and the output. */
    public record Saved(int tokens, RmsNorm.Saved normalized, float[] gateSigmoid, float[] output) {
    }

    /** Input and gate gradients. */
    public record Gradients(float[] dx, float[] dgate) {
    }

    public GatedRmsNorm(String name, int heads, int headDim, float eps) {
        if (heads < 1) {
            throw new IllegalArgumentException("gated rms norm '" + name + "': heads must be >= 1, got " + heads);
        }
        this.heads = heads;
        this.headDim = headDim;
        this.norm = new RmsNorm(name, headDim, eps);
    }

    public Parameter weight() {
        return norm.weight();
    }

    @Override
    public List<Parameter> parameters() {
        return norm.parameters();
    }

    public Saved forward(float[] x, float[] gate, int tokens) {
        int width = heads * headDim;
        Shapes.check(weight().name() + " input", x, tokens, width);
        Shapes.check(weight().name() + " gate", gate, tokens, width);
        RmsNorm.Saved normalized = norm.forward(x, tokens * heads);
        float[] sig = Workspace.floats(gate.length); // both written whole below
        float[] y = Workspace.floats(gate.length);
        Parallel.forBlocks(gate.length, 4096, (from, to) -> {
            for (int i = from; i < to; i++) {
                sig[i] = (float) (1.0 / (1.0 + Math.exp(-gate[i])));
                y[i] = normalized.output()[i] * sig[i];
            }
        });
        return new Saved(tokens, normalized, sig, y);
    }

    public Gradients backward(Saved saved, float[] dy) {
        Shapes.check(weight().name() + " output gradient", dy, saved.tokens(), heads * headDim);
        float[] sig = saved.gateSigmoid();
        float[] n = saved.normalized().output();
        float[] dNormalized = Workspace.floats(dy.length); // both written whole below
        float[] dgate = Workspace.floats(dy.length);
        Parallel.forBlocks(dy.length, 4096, (from, to) -> {
            for (int i = from; i < to; i++) {
                dNormalized[i] = dy[i] * sig[i];
                dgate[i] = dy[i] * n[i] * sig[i] * (1f - sig[i]);
            }
        });
        return new Gradients(norm.backward(saved.normalized(), dNormalized), dgate);
    }
}
