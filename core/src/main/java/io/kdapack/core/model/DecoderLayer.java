package io.kdapack.core.model;

import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.nn.KimiDeltaAttention;
import io.kdapack.core.nn.LatentCache;
import io.kdapack.core.nn.Layer;
import io.kdapack.core.nn.MlaAttention;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.nn.RmsNorm;
import io.kdapack.core.nn.SwiGluMlp;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One pre-norm decoder layer, {@code x, y [T,d]}:
 *
 * <pre>
 * h = x + self_attn(input_layernorm(x))
 * y = h + mlp(post_attention_layernorm(h))
 * </pre>
 *
 * {@code self_attn} is either {@link KimiDeltaAttention} (over the layout's recurrent sequences) or
 * {@link MlaAttention} (block-diagonal causal mask over the documents, RoPE at the layout's positions); {@code mlp}
 * is a {@link SwiGluMlp}. Parameters under {@code <name>.input_layernorm}, {@code <name>.self_attn},
 * {@code <name>.post_attention_layernorm}, {@code <name>.mlp}.
 */
public final class DecoderLayer implements Layer {
    private final RmsNorm inputNorm;
    /** Exactly one of {@code kda} and {@code mla} is set. */
    private final KimiDeltaAttention kda;
    private final MlaAttention mla;
    private final RmsNorm postNorm;
    private final SwiGluMlp mlp;
    private final List<Parameter> parameters;

    /** What backward needs; one of {@code kda} and {@code mla} is null. */
    public record Saved(RmsNorm.Saved input, KimiDeltaAttention.Saved kda, MlaAttention.Saved mla,
                        RmsNorm.Saved post, SwiGluMlp.Saved mlp, float[] output) {
    }

    private DecoderLayer(String name, int hidden, int intermediate, float eps, KimiDeltaAttention kda,
                         MlaAttention mla) {
        this.inputNorm = new RmsNorm(Parameter.join(name, "input_layernorm"), hidden, eps);
        this.kda = kda;
        this.mla = mla;
        this.postNorm = new RmsNorm(Parameter.join(name, "post_attention_layernorm"), hidden, eps);
        this.mlp = new SwiGluMlp(Parameter.join(name, "mlp"), hidden, intermediate);
        List<Parameter> all = new ArrayList<>(inputNorm.parameters());
        all.addAll(kda != null ? kda.parameters() : mla.parameters());
        all.addAll(postNorm.parameters());
        all.addAll(mlp.parameters());
        this.parameters = Collections.unmodifiableList(all);
    }

    /** A layer whose attention is KDA; {@code attention} must be named {@code <name>.self_attn}. */
    public static DecoderLayer withKda(String name, int hidden, int intermediate, float eps,
                                       KimiDeltaAttention attention) {
        return new DecoderLayer(name, hidden, intermediate, eps, attention, null);
    }

    /** A layer whose attention is MLA; {@code attention} must be named {@code <name>.self_attn}. */
    public static DecoderLayer withMla(String name, int hidden, int intermediate, float eps, MlaAttention attention) {
        return new DecoderLayer(name, hidden, intermediate, eps, null, attention);
    }

    /** True when the attention is full (MLA) attention. */
    public boolean isFullAttention() {
        return mla != null;
    }

    @Override
    public List<Parameter> parameters() {
        return parameters;
    }

    public Saved forward(float[] x, BatchLayout layout) {
        int tokens = layout.tokens();
        RmsNorm.Saved input = inputNorm.forward(x, tokens);
        KimiDeltaAttention.Saved kdaSaved = null;
        MlaAttention.Saved mlaSaved = null;
        float[] attended;
        if (kda != null) {
            kdaSaved = kda.forward(input.output(), layout.recurrence());
            attended = kdaSaved.output();
        } else {
            mlaSaved = mla.forward(input.output(), layout.documents(), layout.positions());
            attended = mlaSaved.output();
        }
        float[] h = Tensors.sum(x, attended);
        RmsNorm.Saved post = postNorm.forward(h, tokens);
        SwiGluMlp.Saved mlpSaved = mlp.forward(post.output(), tokens);
        return new Saved(input, kdaSaved, mlaSaved, post, mlpSaved, Tensors.sum(h, mlpSaved.output()));
    }

    /**
     * The inference forward (no tape) of pieces that continue sequences: {@code kdaStates} (KDA layer) or
     * {@code caches} (MLA layer) hold one distinct state per piece and are extended in place; the other is ignored.
     *
     * @param x {@code [T,d]}
     * @return {@code y [T,d]}
     */
    public float[] extend(float[] x, Segments pieces, KdaState[] kdaStates, LatentCache[] caches, KdaBackend op) {
        int tokens = pieces.tokens();
        float[] normed = inputNorm.forward(x, tokens).output();
        float[] attended = kda != null ? kda.extend(normed, pieces, kdaStates, op) : mla.extend(normed, pieces, caches);
        float[] h = Tensors.sum(x, attended);
        return Tensors.sum(h, mlp.forward(postNorm.forward(h, tokens).output(), tokens).output());
    }

    /** An empty decoding state of a KDA layer, null for an MLA layer. */
    KdaState newKdaState() {
        return kda != null ? kda.newState() : null;
    }

    /** An empty decoding cache of an MLA layer, null for a KDA layer. */
    LatentCache newLatentCache() {
        return mla != null ? mla.newCache() : null;
    }

    /** Returns {@code dx [T,d]} and adds every parameter's gradient. */
    public float[] backward(Saved saved, float[] dy) {
        float[] dh = Tensors.sum(dy, postNorm.backward(saved.post(), mlp.backward(saved.mlp(), dy)));
        float[] dAttended = kda != null ? kda.backward(saved.kda(), dh) : mla.backward(saved.mla(), dh);
        return Tensors.sum(dh, inputNorm.backward(saved.input(), dAttended));
    }
}
