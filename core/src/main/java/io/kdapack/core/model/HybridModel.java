package io.kdapack.core.model;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.linalg.Workspace;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.nn.Embedding;
import io.kdapack.core.nn.KimiDeltaAttention;
import io.kdapack.core.nn.LatentCache;
import io.kdapack.core.nn.MlaAttention;
import io.kdapack.core.nn.MlaShape;
import io.kdapack.core.nn.Parallel;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.nn.RmsNorm;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

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
    private final KdaBackend kdaBackend;

    /**
     * A model with every projection zero and norms one: call {@link #initialize(long)} or {@link #load(SafeTensors)}.
     *
     * @param isolation isolate documents (true), or treat each row as one sequence in every layer
     */
    public HybridModel(ModelConfig config, KdaBackend backend, boolean isolation) {
        validate(config);
        this.config = config;
        this.isolation = isolation;
        this.kdaBackend = backend;
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

    /** The KDA implementation the model was built with (the training forward's, and the default for prefill). */
    public KdaBackend kdaBackend() {
        return kdaBackend;
    }

    /**
     * The logits of the training forward, without loss or tape: {@code [T,V]} for every position of the batch
     * (labels and masks are not read). The reference that {@link #extend} is checked against.
     */
    public float[] logits(MicroBatch batch) {
        BatchLayout layout = BatchLayout.of(batch, isolation);
        float[] x = embedTokens.forward(batch.tokens());
        for (DecoderLayer layer : layers) {
            x = layer.forward(x, layout).output();
        }
        return lmHead.forward(norm.forward(x, batch.size()).output(), batch.size());
    }

    /** An empty sequence for {@link #extend}: zero KDA states and windows, empty MLA caches. */
    public SequenceState newSequence() {
        KdaState[] kda = new KdaState[layers.size()];
        LatentCache[] latent = new LatentCache[layers.size()];
        for (int i = 0; i < layers.size(); i++) {
            kda[i] = layers.get(i).newKdaState();
            latent[i] = layers.get(i).newLatentCache();
        }
        return new SequenceState(kda, latent);
    }

    /**
     * Bytes of one sequence's decoding state after {@code tokens} tokens: {@code 4·(HV·K·V + (2·H·K + HV·V)·(W−1))}
     * per KDA layer, whatever the length, plus {@code 4·tokens·(Ckv+R)} per MLA layer (as cached, not as allocated).
     */
    public long stateBytes(long tokens) {
        KdaConfig kda = config.kda();
        int k = kda.headDim();
        long kdaLayer = 4L * ((long) kda.numVHeads() * k * k
                + (2L * kda.numHeads() * k + (long) kda.numVHeads() * k) * (kda.convSize() - 1));
        long mlaToken = 4L * (config.mla().kvLoraRank() + config.mla().qkRopeHeadDim());
        long bytes = 0;
        for (DecoderLayer layer : layers) {
            bytes += layer.isFullAttention() ? tokens * mlaToken : kdaLayer;
        }
        return bytes;
    }

    /**
     * The inference forward (DESIGN §6), no tape: {@code pieces[n]} are the next tokens of {@code sequences[n]},
     * run as one packed varlen batch (all pieces back to back, one sequence each) that continues every sequence
     * from its state at positions {@code length … length+len−1} and leaves its state after the piece. A prefill is
     * a call with whole prompts (or pieces of them, carried across calls); a decode step is a call with one token
     * per sequence. Only the main model runs (MTP, a training aid, is not used).
     *
     * @param pieces    {@code [N][len_n]} token ids, every {@code len_n ≥ 1}
     * @param sequences {@code [N]} distinct states from {@link #newSequence()}, advanced in place
     * @param op        the KDA implementation for this call (e.g. {@link #kdaBackend()} for prefill, the
     *                  token-by-token recurrence for decode)
     * @return {@code [N,V]} the logits after each piece's last token
     */
    public float[] extend(int[][] pieces, SequenceState[] sequences, KdaBackend op) {
        int n = pieces.length;
        if (sequences.length != n) {
            throw new IllegalArgumentException("extend: " + n + " pieces but " + sequences.length + " sequences");
        }
        Set<SequenceState> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
        int[] starts = new int[n];
        int[] ends = new int[n];
        int total = 0;
        for (int s = 0; s < n; s++) {
            if (pieces[s] == null || pieces[s].length == 0) {
                throw new IllegalArgumentException("extend: piece " + s + " is empty; every piece needs >= 1 token");
            }
            if (!distinct.add(sequences[s])) {
                throw new IllegalArgumentException("extend: sequence " + s + " appears twice in one call");
            }
            starts[s] = total;
            total = Math.addExact(total, pieces[s].length);
            ends[s] = total;
        }
        int[] tokens = new int[total];
        for (int s = 0; s < n; s++) {
            System.arraycopy(pieces[s], 0, tokens, starts[s], pieces[s].length);
        }
        Segments segments = new Segments(total, starts, ends);
        float[] x = embedTokens.forward(tokens);
        for (int i = 0; i < layers.size(); i++) {
            KdaState[] kda = new KdaState[n];
            LatentCache[] latent = new LatentCache[n];
            for (int s = 0; s < n; s++) {
                kda[s] = sequences[s].kda(i);
                latent[s] = sequences[s].latent(i);
            }
            x = layers.get(i).extend(x, segments, kda, latent, op);
        }
        int d = config.hiddenSize();
        float[] last = new float[n * d];
        for (int s = 0; s < n; s++) {
            System.arraycopy(x, (ends[s] - 1) * d, last, s * d, d);
            sequences[s].advance(pieces[s].length);
        }
        return lmHead.forward(norm.forward(last, n).output(), n);
    }

    @Override
    public Output run(MicroBatch batch, LossWeights lossWeights) {
        if (mtp != null && batch.mtpLabels() == null) {
            throw new IllegalArgumentException("batch: the model has MTP depth 1, so mtpLabels and mtpLossMask "
                    + "must be set");
        }
        // Every array a layer takes from the workspace is dead once the step returns: the output's arrays are not.
        try (Workspace.Scope scope = Workspace.shared().open()) { // the step's arrays, reused from step to step
            int tokens = batch.size();
            BatchLayout layout = BatchLayout.of(batch, isolation);

            float[] x = embedTokens.forward(batch.tokens());
            List<DecoderLayer.Saved> saved = new ArrayList<>(layers.size());
            int[] forwardMarks = new int[layers.size() + 1]; // layer i's forward lends between marks i and i+1
            for (int i = 0; i < layers.size(); i++) {
                forwardMarks[i] = Workspace.mark();
                DecoderLayer.Saved s = layers.get(i).forward(x, layout);
                saved.add(s);
                x = s.output();
            }
            forwardMarks[layers.size()] = Workspace.mark();
            RmsNorm.Saved last = norm.forward(x, tokens);
            float[] h = last.output();
            // Each head's loss and its backward through the head in one pass (the logits a block of tokens at a time):
            // the main head's weight gradient is added before the MTP head's, as the two backwards did in that order.
            TokenLoss main = lmHead.loss(h, tokens, batch.labels(), batch.lossMask(),
                    lossWeights == null ? Double.NaN : lossWeights.tokenWeight());

            MultiTokenPrediction.Saved mtpSaved = null;
            TokenLoss mtpLoss = null;
            if (mtp != null) {
                mtpSaved = mtp.forward(embedTokens.forward(batch.labels()), h, layout);
                mtpLoss = lmHead.loss(mtpSaved.output(), tokens, batch.mtpLabels(), batch.mtpLossMask(),
                        lossWeights == null ? Double.NaN : lossWeights.mtpTokenWeight());
            }

            if (lossWeights != null) {
                float[] dh = main.dh();
                if (mtp != null) {
                    MultiTokenPrediction.Gradients g = mtp.backward(mtpSaved, mtpLoss.dh());
                    Parallel.addInto(dh, g.dHidden());
                    embedTokens.backward(batch.labels(), g.dEmbedding());
                }
                float[] dx = norm.backward(last, dh);
                for (int i = layers.size() - 1; i >= 0; i--) {
                    int backwardMark = Workspace.mark();
                    float[] dy = dx;
                    dx = layers.get(i).backward(saved.get(i), dy);
                    // Layer i's activations (its output was the input of the layer after, whose backward has run)
                    // and its backward's temporaries are dead, but for the gradient it hands on: back for reuse.
                    Workspace.releaseLent(forwardMarks[i], forwardMarks[i + 1], dx);
                    Workspace.releaseLent(backwardMark, Workspace.mark(), dx);
                    if (dy != dx) {
                        Workspace.release(dy);
                    }
                }
                embedTokens.backward(batch.tokens(), dx);
            }
            return mtpLoss == null
                    ? new Output(main.perToken(), main.report().sum(), main.report().count(), null, 0, 0)
                    : new Output(main.perToken(), main.report().sum(), main.report().count(), mtpLoss.perToken(),
                    mtpLoss.report().sum(), mtpLoss.report().count());
        }
    }
}
