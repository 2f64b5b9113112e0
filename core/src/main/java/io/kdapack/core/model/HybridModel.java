package io.kdapack.core.model;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.nn.Embedding;
import io.kdapack.core.nn.KimiDeltaAttention;
import io.kdapack.core.nn.MlaAttention;
import io.kdapack.core.nn.MlaShape;
import io.kdapack.core.nn.Parallel;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.nn.RmsNorm;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The hybrid KDA decoder of architecture §3 (exact wiring and weight names: {@code docs/model.md}), {@code T = B·L}:
 *
 * <pre>
 * x_0 = embed_tokens(tokens)                                   [T,d]
 * x_{i+1} = layers[i](x_i)      layer i is MLA iff (i+1) % full_attention_interval == 0, else KDA
 * h = norm(x_N);  logits = lm_head(h)                          (lm_head.weight, or embed_tokens.weight when tied)
 * loss = Σ_t w · mask_t · ce(logits_t, labels_t)
 * MTP (depth 1): y = mtp.0(embed_tokens(labels), h);  mtp_loss = Σ_t w_mtp · mtp_mask_t · ce(lm_head(y)_t, mtp_labels_t)
 * </pre>
 *
 * With {@code isolation} on, full attention sees the documents of the segment ids (block-diagonal causal mask) at
 * the micro-batch's positions and KDA and its short convolutions restart at every document; with it off, each row
 * is one sequence for every layer (what a model packed without document isolation computes). Parallel work runs in the caller's fork-join pool
 * (or the common pool) and the KDA backend's own threads; every result is bitwise the same whatever their size.
 */
public final class HybridModel implements LanguageModel {
    private final ModelConfig config;
    private final boolean isolation;
    private final Embedding embedTokens;
    private final List<DecoderLayer> layers;
    private final RmsNorm norm;
    private final Parameter lmHeadWeight;
    private final LmHead lmHead;
    private final MultiTokenPrediction mtp;
    private final List<Parameter> parameters;

    /**
     * A model with every projection zero and norms one: call {@link #initialize(long)} or {@link #load(SafeTensors)}.
     *
     * @param isolation isolate documents (true), or treat each row as one sequence in every layer
     */
    public HybridModel(ModelConfig config, KdaBackend backend, boolean isolation) {
        validate(config);
        this.config = config;
        this.isolation = isolation;
        int d = config.hiddenSize();
        float eps = (float) config.rmsNormEps();
        MlaShape mlaShape = MlaShape.of(config);
        embedTokens = new Embedding("model.embed_tokens", config.vocabSize(), d);
        List<DecoderLayer> built = new ArrayList<>();
        for (int i = 0; i < config.numLayers(); i++) {
            String name = "model.layers." + i;
            String attention = name + ".self_attn";
            built.add(config.isFullAttention(i)
                    ? DecoderLayer.withMla(name, d, config.intermediateSize(), eps, new MlaAttention(attention, mlaShape))
                    : DecoderLayer.withKda(name, d, config.intermediateSize(), eps,
                            new KimiDeltaAttention(attention, d, config.kda(), backend)));
        }
        layers = List.copyOf(built);
        norm = new RmsNorm("model.norm", d, eps);
        lmHeadWeight = config.tieWordEmbeddings() ? embedTokens.weight()
                : Parameter.filled("lm_head.weight", 0f, config.vocabSize(), d);
        lmHead = new LmHead(lmHeadWeight);
        if (config.mtp().depth() == 1) {
            String name = "model.mtp.0";
            DecoderLayer layer = DecoderLayer.withMla(name + ".layer", d, config.intermediateSize(), eps,
                    new MlaAttention(name + ".layer.self_attn", mlaShape));
            mtp = new MultiTokenPrediction(name, d, eps, layer);
        } else {
            mtp = null;
        }

        List<Parameter> all = new ArrayList<>(embedTokens.parameters());
        layers.forEach(layer -> all.addAll(layer.parameters()));
        all.addAll(norm.parameters());
        if (!config.tieWordEmbeddings()) {
            all.add(lmHeadWeight);
        }
        if (mtp != null) {
            all.addAll(mtp.parameters());
        }
        parameters = Collections.unmodifiableList(all);
    }

    private static void validate(ModelConfig config) {
        if (config.vocabSize() < 1 || config.hiddenSize() < 1 || config.numLayers() < 1
                || config.intermediateSize() < 1 || config.fullAttentionInterval() < 1) {
            throw new IllegalArgumentException("model: vocab_size, hidden_size, num_layers, intermediate_size and "
                    + "full_attention_interval must be >= 1, got " + config);
        }
        KdaConfig kda = config.kda();
        if (kda.headDim() < 1 || kda.convSize() < 1) {
            throw new IllegalArgumentException("model.kda: head_dim and conv_size must be >= 1, got " + kda);
        }
        int depth = config.mtp().depth();
        if (depth != 0 && depth != 1) {
            throw new IllegalArgumentException("model.mtp.depth must be 0 or 1, got " + depth);
        }
    }

    public ModelConfig config() {
        return config;
    }

    /** True when KDA and the short convolutions restart at document boundaries. */
    public boolean isolation() {
        return isolation;
    }

    @Override
    public List<Parameter> parameters() {
        return parameters;
    }

    @Override
    public int mtpDepth() {
        return mtp == null ? 0 : 1;
    }

    /** Deterministic initialisation from {@code seed} (rules in {@link ModelInit}). */
    public void initialize(long seed) {
        ModelInit.initialize(parameters, seed);
    }

    /** Loads every weight by name (see {@link ModelWeights#load}). */
    public void load(SafeTensors weights) {
        ModelWeights.load(parameters, weights);
    }

    /** The weights by name, F32. */
    public SafeTensors weights() {
        return ModelWeights.toSafeTensors(parameters);
    }

    @Override
    public Output run(MicroBatch batch, LossWeights lossWeights) {
        if (mtp != null && batch.mtpLabels() == null) {
            throw new IllegalArgumentException("batch: the model has MTP depth 1, so mtpLabels and mtpLossMask "
                    + "must be set");
        }
        int tokens = batch.size();
        int vocab = config.vocabSize();
        BatchLayout layout = BatchLayout.of(batch, isolation);

        float[] x = embedTokens.forward(batch.tokens());
        List<DecoderLayer.Saved> saved = new ArrayList<>(layers.size());
        for (DecoderLayer layer : layers) {
            DecoderLayer.Saved s = layer.forward(x, layout);
            saved.add(s);
            x = s.output();
        }
        RmsNorm.Saved last = norm.forward(x, tokens);
        float[] h = last.output();
        TokenLoss main = TokenLoss.of(lmHead.forward(h, tokens), batch.labels(), batch.lossMask(), vocab);

        MultiTokenPrediction.Saved mtpSaved = null;
        TokenLoss mtpLoss = null;
        if (mtp != null) {
            mtpSaved = mtp.forward(embedTokens.forward(batch.labels()), h, layout);
            mtpLoss = TokenLoss.of(lmHead.forward(mtpSaved.output(), tokens), batch.mtpLabels(), batch.mtpLossMask(),
                    vocab);
        }

        if (lossWeights != null) {
            float[] dh = lmHead.backward(h, main.gradient(lossWeights.tokenWeight()), tokens);
            if (mtp != null) {
                float[] dMtpOut = lmHead.backward(mtpSaved.output(), mtpLoss.gradient(lossWeights.mtpTokenWeight()),
                        tokens);
                MultiTokenPrediction.Gradients g = mtp.backward(mtpSaved, dMtpOut);
                Parallel.addInto(dh, g.dHidden());
                embedTokens.backward(batch.labels(), g.dEmbedding());
            }
            float[] dx = norm.backward(last, dh);
            for (int i = layers.size() - 1; i >= 0; i--) {
                dx = layers.get(i).backward(saved.get(i), dx);
            }
            embedTokens.backward(batch.tokens(), dx);
        }
        return mtpLoss == null
                ? new Output(main.perToken(), main.report().sum(), main.report().count(), null, 0, 0)
                : new Output(main.perToken(), main.report().sum(), main.report().count(), mtpLoss.perToken(),
                mtpLoss.report().sum(), mtpLoss.report().count());
    }
}
