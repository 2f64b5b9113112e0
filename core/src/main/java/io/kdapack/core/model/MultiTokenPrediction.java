package io.kdapack.core.model;

import io.kdapack.core.nn.Layer;
import io.kdapack.core.nn.Linear;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.nn.RmsNorm;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Multi-token prediction, depth 1, in the DeepSeek-V3 / Megatron form ({@code x, h, y [T,d]}):
 *
 * <pre>
 * u = eh_proj([enorm(embed(labels)) | hnorm(h)])     eh_proj [d, 2d], embedding half first
 * y = norm(layer(u))                                  layer: one full-attention (MLA) decoder layer
 * </pre>
 *
 * where {@code embed(labels)[t]} is the shared embedding of the token one ahead and {@code h} the main model's last
 * hidden state after its final norm. The caller applies the shared LM head to {@code y}. Parameters
 * {@code <name>.enorm.weight, <name>.hnorm.weight, <name>.eh_proj.weight, <name>.layer.*, <name>.norm.weight}.
 */
public final class MultiTokenPrediction implements Layer {
    private final int hidden;
    private final RmsNorm enorm;
    private final RmsNorm hnorm;
    private final Linear ehProj;
    private final DecoderLayer layer;
    private final RmsNorm norm;
    private final List<Parameter> parameters;

    /** What backward needs. */
    public record Saved(RmsNorm.Saved embedding, RmsNorm.Saved hidden, Linear.Saved projected,
                        DecoderLayer.Saved layer, RmsNorm.Saved norm) {
        /** {@code y [T,d]}. */
        public float[] output() {
            return norm.output();
        }
    }

    /** Gradients of the two inputs: the embedding of the labels and the main hidden state, both {@code [T,d]}. */
    public record Gradients(float[] dEmbedding, float[] dHidden) {
    }

    /** @param layer a full-attention decoder layer named {@code <name>.layer} */
    public MultiTokenPrediction(String name, int hidden, float eps, DecoderLayer layer) {
        if (!layer.isFullAttention()) {
            throw new IllegalArgumentException("mtp '" + name + "': the MTP layer must be a full-attention layer");
        }
        this.hidden = hidden;
        this.enorm = new RmsNorm(Parameter.join(name, "enorm"), hidden, eps);
        this.hnorm = new RmsNorm(Parameter.join(name, "hnorm"), hidden, eps);
        this.ehProj = new Linear(Parameter.join(name, "eh_proj"), 2 * hidden, hidden, false);
        this.layer = layer;
        this.norm = new RmsNorm(Parameter.join(name, "norm"), hidden, eps);
        List<Parameter> all = new ArrayList<>();
        for (Layer part : List.of(enorm, hnorm, ehProj, layer, norm)) {
            all.addAll(part.parameters());
        }
        this.parameters = Collections.unmodifiableList(all);
    }

    @Override
    public List<Parameter> parameters() {
        return parameters;
    }

    /**
     * @param embedded {@code [T,d]} embedding of the token one ahead
     * @param hidden   {@code [T,d]} main model's final-normed hidden state
     */
    public Saved forward(float[] embedded, float[] hidden, BatchLayout layout) {
        int tokens = layout.tokens();
        RmsNorm.Saved e = enorm.forward(embedded, tokens);
        RmsNorm.Saved h = hnorm.forward(hidden, tokens);
        Linear.Saved projected = ehProj.forward(Tensors.concatRows(e.output(), this.hidden, h.output(), this.hidden,
                tokens), tokens);
        DecoderLayer.Saved layerSaved = layer.forward(projected.output(), layout);
        return new Saved(e, h, projected, layerSaved, norm.forward(layerSaved.output(), tokens));
    }

    public Gradients backward(Saved saved, float[] dy) {
        int tokens = saved.norm().rows();
        float[] dConcat = ehProj.backward(saved.projected(), layer.backward(saved.layer(), norm.backward(saved.norm(),
                dy)));
        float[] dE = Tensors.columns(dConcat, 2 * hidden, 0, hidden, tokens);
        float[] dH = Tensors.columns(dConcat, 2 * hidden, hidden, hidden, tokens);
        return new Gradients(enorm.backward(saved.embedding(), dE), hnorm.backward(saved.hidden(), dH));
    }
}
