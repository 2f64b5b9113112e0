package io.kdapack.cli;

import io.kdapack.core.loss.CrossEntropy;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.ModelFactory;
import java.util.List;

/**
 * The smallest trainable test double: the same logits {@code z = lm_head.bias [V]} at every position (a unigram
 * model), for the main and the MTP targets; sequential and exact, so the command's plumbing can be tested fast.
 */
final class UnigramModel implements LanguageModel {
    static final ModelFactory FACTORY = (model, train) -> new UnigramModel(model.vocabSize(), model.mtp().depth());

    private final int vocab;
    private final int mtpDepth;
    private final Parameter logits;

    UnigramModel(int vocab, int mtpDepth) {
        this.vocab = vocab;
        this.mtpDepth = mtpDepth;
        this.logits = Parameter.filled("lm_head.bias", 0f, vocab);
    }

    @Override
    public List<Parameter> parameters() {
        return List.of(logits);
    }

    @Override
    public int mtpDepth() {
        return mtpDepth;
    }

    @Override
    public Output run(MicroBatch batch, LossWeights weights) {
        double[] loss = score(batch.labels(), batch.lossMask(), weights == null ? null : weights.tokenWeight());
        double[] mtp = mtpDepth == 0 ? null
                : score(batch.mtpLabels(), batch.mtpLossMask(), weights == null ? null : weights.mtpTokenWeight());
        return new Output(loss, sum(loss), batch.lossTokens(), mtp, mtp == null ? 0 : sum(mtp), batch.mtpLossTokens());
    }

    private double[] score(int[] labels, float[] mask, Double weight) {
        int n = labels.length;
        float[] z = new float[n * vocab];
        for (int t = 0; t < n; t++) {
            System.arraycopy(logits.values(), 0, z, t * vocab, vocab);
        }
        CrossEntropy.Result ce = CrossEntropy.forward(z, labels, vocab);
        if (weight != null) {
            double[] w = new double[n];
            for (int t = 0; t < n; t++) {
                w[t] = mask[t] * weight;
            }
            float[] dz = new float[z.length];
            CrossEntropy.backward(z, labels, vocab, ce.logSumExp(), w, dz);
            for (int t = 0; t < n; t++) {
                for (int v = 0; v < vocab; v++) {
                    logits.grads()[v] += dz[t * vocab + v];
                }
            }
        }
        double[] loss = ce.loss();
        for (int t = 0; t < n; t++) {
            loss[t] *= mask[t];
        }
        return loss;
    }

    private static double sum(double[] a) {
        double s = 0;
        for (double x : a) {
            s += x;
        }
        return s;
    }
}
