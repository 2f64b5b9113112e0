package io.kdapack.training;

import io.kdapack.core.loss.CrossEntropy;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * Test double of the hybrid model with real gradients: a softmax regression on the current token and the previous
 * one. {@code h_t = E[x_t] + P[x_{t−1}]} (the previous-token term is dropped at a row's start, and at a document start
 * when isolated), {@code logits_t = W·h_t}. With MTP depth 1 the MTP head predicts the rolled label from
 * {@code h_t + E[labels_t]} (the embedding of the token one ahead) through the same {@code W}.
 *
 * <p>Tokens are processed in fixed blocks of {@value #BLOCK} in the caller's fork-join pool; each block adds its
 * gradient into its own buffer and the buffers are summed in block order, so results do not depend on the pool size.
 */
final class BigramModel implements LanguageModel {
    static final ModelFactory FACTORY = (model, train) ->
            new BigramModel(model.vocabSize(), 16, model.mtp().depth(), train.seed(), train.isolation());
    private static final int BLOCK = 32;

    private final int vocab;
    private final int width;
    private final int mtpDepth;
    private final boolean isolation;
    private final Parameter embed;
    private final Parameter previous;
    private final Parameter head;

    BigramModel(int vocab, int width, int mtpDepth, long seed, boolean isolation) {
        this.vocab = vocab;
        this.width = width;
        this.mtpDepth = mtpDepth;
        this.isolation = isolation;
        Random random = new Random(seed);
        embed = Parameter.filled("model.embed_tokens.weight", 0f, vocab, width);
        previous = Parameter.filled("model.previous_tokens.weight", 0f, vocab, width);
        head = Parameter.filled("lm_head.weight", 0f, vocab, width);
        for (Parameter p : parameters()) {
            p.initNormal(random, 0.1);
        }
    }

    @Override
    public List<Parameter> parameters() {
        return List.of(embed, previous, head);
    }

    @Override
    public int mtpDepth() {
        return mtpDepth;
    }

    @Override
    public Output run(MicroBatch batch, LossWeights weights) {
        int n = batch.size();
        int blocks = (n + BLOCK - 1) / BLOCK;
        double[] loss = new double[n];
        double[] mtpLoss = mtpDepth > 0 ? new double[n] : null;
        float[][] partial = new float[blocks][];
        IntStream.range(0, blocks).parallel().forEach(b -> partial[b] = block(batch, weights, b * BLOCK,
                Math.min(n, (b + 1) * BLOCK), loss, mtpLoss));
        if (weights != null) {
            for (float[] g : partial) {
                addGradients(g);
            }
        }
        double sum = 0;
        double mtpSum = 0;
        for (int t = 0; t < n; t++) {
            loss[t] *= batch.lossMask()[t];
            sum += loss[t];
            if (mtpLoss != null) {
                mtpLoss[t] *= batch.mtpLossMask()[t];
                mtpSum += mtpLoss[t];
            }
        }
        return new Output(loss, sum, batch.lossTokens(), mtpLoss, mtpSum, batch.mtpLossTokens());
    }

    /** Loss of tokens {@code [from, to)}; returns their gradient, laid out as embed | previous | head. */
    private float[] block(MicroBatch batch, LossWeights weights, int from, int to, double[] loss, double[] mtpLoss) {
        int count = to - from;
        float[] hidden = new float[count * width];
        int[] labels = new int[count];
        for (int t = from; t < to; t++) {
            int p = previousToken(batch, t);
            for (int j = 0; j < width; j++) {
                hidden[(t - from) * width + j] = embed.values()[batch.tokens()[t] * width + j]
                        + (p >= 0 ? previous.values()[p * width + j] : 0f);
            }
            labels[t - from] = batch.labels()[t];
        }
        float[] grads = weights == null ? null : new float[3 * vocab * width];
        head(batch, from, hidden, labels, weights == null ? 0 : weights.tokenWeight(), batch.lossMask(), loss, grads, null);
        if (mtpDepth > 0) {
            float[] mtpHidden = hidden.clone();
            int[] mtpLabels = new int[count];
            for (int t = from; t < to; t++) {
                for (int j = 0; j < width; j++) {
                    mtpHidden[(t - from) * width + j] += embed.values()[batch.labels()[t] * width + j];
                }
                mtpLabels[t - from] = batch.mtpLabels()[t];
            }
            head(batch, from, mtpHidden, mtpLabels, weights == null ? 0 : weights.mtpTokenWeight(), batch.mtpLossMask(),
                    mtpLoss, grads, batch.labels());
        }
        return grads;
    }

    /** Cross-entropy of {@code W·h}; with gradients, adds those of W and of the embeddings that built h. */
    private void head(MicroBatch batch, int from, float[] hidden, int[] labels, double tokenWeight, float[] mask,
                      double[] lossOut, float[] grads, int[] aheadTokens) {
        int count = labels.length;
        float[] logits = new float[count * vocab];
        for (int t = 0; t < count; t++) {
            for (int v = 0; v < vocab; v++) {
                float z = 0;
                for (int j = 0; j < width; j++) {
                    z += head.values()[v * width + j] * hidden[t * width + j];
                }
                logits[t * vocab + v] = z;
            }
        }
        CrossEntropy.Result ce = CrossEntropy.forward(logits, labels, vocab);
        System.arraycopy(ce.loss(), 0, lossOut, from, count);
        if (grads == null) {
            return;
        }
        double[] w = new double[count];
        for (int t = 0; t < count; t++) {
            w[t] = mask[from + t] * tokenWeight;
        }
        float[] dz = new float[logits.length];
        CrossEntropy.backward(logits, labels, vocab, ce.logSumExp(), w, dz);
        int headAt = 2 * vocab * width;
        for (int t = 0; t < count; t++) {
            int token = batch.tokens()[from + t];
            int prev = previousToken(batch, from + t);
            for (int v = 0; v < vocab; v++) {
                float g = dz[t * vocab + v];
                if (g == 0f) {
                    continue;
                }
                for (int j = 0; j < width; j++) {
                    grads[headAt + v * width + j] += g * hidden[t * width + j];
                    float dh = g * head.values()[v * width + j];
                    grads[token * width + j] += dh;
                    if (prev >= 0) {
                        grads[vocab * width + prev * width + j] += dh;
                    }
                    if (aheadTokens != null) {
                        grads[aheadTokens[from + t] * width + j] += dh;
                    }
                }
            }
        }
    }

    private int previousToken(MicroBatch batch, int t) {
        int column = t % batch.length();
        if (column == 0 || isolation && batch.segmentIds()[t] != batch.segmentIds()[t - 1]) {
            return -1;
        }
        return batch.tokens()[t - 1];
    }

    private void addGradients(float[] g) {
        int size = vocab * width;
        for (int i = 0; i < size; i++) {
            embed.grads()[i] += g[i];
            previous.grads()[i] += g[size + i];
            head.grads()[i] += g[2 * size + i];
        }
    }
}
