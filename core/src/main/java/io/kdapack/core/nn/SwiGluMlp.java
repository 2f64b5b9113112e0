package io.kdapack.core.nn;

import io.kdapack.core.linalg.ExpKernels;
import io.kdapack.core.linalg.VectorWidth;
import io.kdapack.core.linalg.Workspace;
import java.util.List;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * SwiGLU feed-forward (Llama / DeepSeek {@code MLP}): {@code y = down_proj(silu(gate_proj(x)) ⊙ up_proj(x))} with
 * {@code x, y [T,d]}, {@code gate_proj, up_proj [I,d]}, {@code down_proj [d,I]}, no biases. Parameters
 * {@code <name>.gate_proj.weight}, {@code <name>.up_proj.weight}, {@code <name>.down_proj.weight}.
 */
public final class SwiGluMlp implements Layer {
    private static final VectorSpecies<Float> SPECIES = VectorWidth.SPECIES;
    private static final int LANES = SPECIES.length();
    private final Linear gateProj;
    private final Linear upProj;
    private final Linear downProj;

    /** What backward needs: the three projections' saved states ({@code [T,I]} gate and up pre-activations). */
    public record Saved(Linear.Saved gate, Linear.Saved up, Linear.Saved down) {
        public float[] output() {
            return down.output();
        }
    }

    public SwiGluMlp(String name, int hidden, int intermediate) {
        this.gateProj = new Linear(Parameter.join(name, "gate_proj"), hidden, intermediate, false);
        this.upProj = new Linear(Parameter.join(name, "up_proj"), hidden, intermediate, false);
        this.downProj = new Linear(Parameter.join(name, "down_proj"), intermediate, hidden, false);
    }

    @Override
    public List<Parameter> parameters() {
        return List.of(gateProj.weight(), upProj.weight(), downProj.weight());
    }

    public Saved forward(float[] x, int tokens) {
        Linear.Saved gate = gateProj.forward(x, tokens);
        Linear.Saved up = upProj.forward(x, tokens);
        float[] g = gate.output();
        float[] u = up.output();
        float[] h = Workspace.floats(g.length); // written whole below
        Parallel.forBlocks(h.length, 4096, (from, to) -> {
            int i = from;
            for (; i <= to - LANES; i += LANES) {
                FloatVector gv = FloatVector.fromArray(SPECIES, g, i);
                gv.mul(ExpKernels.sigmoid(gv)).mul(FloatVector.fromArray(SPECIES, u, i)).intoArray(h, i);
            }
            for (; i < to; i++) {
                h[i] = g[i] * ExpKernels.sigmoid(g[i]) * u[i];
            }
        });
        return new Saved(gate, up, downProj.forward(h, tokens));
    }

    public float[] backward(Saved saved, float[] dy) {
        float[] dh = downProj.backward(saved.down(), dy);
        float[] g = saved.gate().output();
        float[] u = saved.up().output();
        float[] dg = Workspace.floats(g.length); // both written whole below
        float[] du = Workspace.floats(g.length);
        Parallel.forBlocks(g.length, 4096, (from, to) -> {
            int i = from;
            for (; i <= to - LANES; i += LANES) {
                FloatVector gv = FloatVector.fromArray(SPECIES, g, i);
                FloatVector dhv = FloatVector.fromArray(SPECIES, dh, i);
                FloatVector s = ExpKernels.sigmoid(gv);
                dhv.mul(gv).mul(s).intoArray(du, i);
                FloatVector slope = gv.mul(s.neg().add(1f)).add(1f);
                dhv.mul(FloatVector.fromArray(SPECIES, u, i)).mul(s).mul(slope).intoArray(dg, i);
            }
            for (; i < to; i++) {
                float s = ExpKernels.sigmoid(g[i]);
                du[i] = dh[i] * g[i] * s;
                dg[i] = dh[i] * u[i] * s * (1f + g[i] * (1f - s));
            }
        });
        // This layer's activations and temporaries are dead from here on: back to the step's workspace for the next.
        Workspace.release(dh, saved.down().input());
        float[] dx = gateProj.backward(saved.gate(), dg);
        Workspace.release(dg, g);
        float[] dxUp = upProj.backward(saved.up(), du);
        Workspace.release(du, u);
        Parallel.addInto(dx, dxUp);
        Workspace.release(dxUp);
        return dx;
    }

}
