package io.kdapack.core.model;

import io.kdapack.core.nn.Parallel;
import io.kdapack.core.nn.Parameter;

/**
 * The LM head {@code logits = h · Wᵀ} with {@code h [T,d]}, {@code W [V,d]}, {@code logits [T,V]}: its own
 * {@code lm_head.weight}, or the embedding matrix when the word embeddings are tied. Called once for the main
 * hidden states and once for the MTP hidden states; each backward adds into the same weight gradient.
 */
final class LmHead {
    private final Parameter weight;
    private final int vocab;
    private final int hidden;

    LmHead(Parameter weight) {
        int[] shape = weight.shape();
        if (shape.length != 2) {
            throw new IllegalArgumentException("lm head weight '" + weight.name() + "' must be [V,d], got rank "
                    + shape.length);
        }
        this.weight = weight;
        this.vocab = shape[0];
        this.hidden = shape[1];
    }

    int vocab() {
        return vocab;
    }

    /** {@code [T,V]} logits of {@code h [T,d]}. */
    float[] forward(float[] h, int tokens) {
        float[] logits = new float[tokens * vocab];
        Parallel.gemm(false, true, tokens, vocab, hidden, 1f, h, 0, hidden, weight.values(), 0, hidden, 0f, logits, 0,
                vocab);
        return logits;
    }

    /** Returns {@code dh [T,d]}; adds {@code dLogitsᵀ · h} to the weight gradient. */
    float[] backward(float[] h, float[] dLogits, int tokens) {
        float[] dh = new float[tokens * hidden];
        Parallel.gemm(false, false, tokens, hidden, vocab, 1f, dLogits, 0, vocab, weight.values(), 0, hidden, 0f, dh, 0,
                hidden);
        Parallel.gemm(true, false, vocab, hidden, tokens, 1f, dLogits, 0, vocab, h, 0, hidden, 1f, weight.grads(), 0,
                hidden);
        return dh;
    }
}
