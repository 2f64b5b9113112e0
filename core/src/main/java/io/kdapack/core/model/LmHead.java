package io.kdapack.core.model;

import io.kdapack.core.linalg.Gemm;
import io.kdapack.core.linalg.Workspace;
import io.kdapack.core.loss.CrossEntropy;
import io.kdapack.core.loss.LossReport;
import io.kdapack.core.nn.Parallel;
import io.kdapack.core.nn.Parameter;
import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;

/**
 * The LM head {@code logits = h · Wᵀ} with {@code h [T,d]}, {@code W [V,d]}, {@code logits [T,V]}: its own
 * {@code lm_head.weight}, or the embedding matrix when the word embeddings are tied. Called once for the main
 * hidden states and once for the MTP hidden states; each backward adds into the same weight gradient.
 */
final class LmHead {
    /**
     * Tokens whose logits {@link #loss} forms at a time: {@code [256,V]} is 32 MiB at V = 32 000, where the whole
     * {@code [T,V]} was 512 MiB at T = 4096 (and the MTP head's as much again), written to and read back from memory
     * several times. The k block of {@link Gemm}, so that the weight gradient, summed block after block, is summed in
     * the order of the single product over all tokens: the same bits.
     */
    static final int TOKEN_BLOCK = Gemm.KC;
    /** Tokens a task of the cross-entropy takes. */
    private static final int LOSS_GRAIN = 64;

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

    /**
     * The masked cross-entropy of {@code logits = h · Wᵀ} against {@code labels}, and, unless {@code lossWeight} is
     * NaN, the backward of {@code Σ_t lossWeight·mask_t·ce_t}: {@code dh} in the result, {@code dLogitsᵀ · h} added
     * to the weight gradient. The logits are formed {@value #TOKEN_BLOCK} tokens at a time, their loss taken and their
     * gradient written over them and used, before the next block's: every figure is the bits of the whole
     * {@code [T,V]} logits formed at once (each token's logits and loss are its own; see {@link #TOKEN_BLOCK} for the
     * weight gradient).
     *
     * @param h      {@code [T,d]} the head's input
     * @param labels {@code [T]}
     * @param mask   {@code [T]} 0/1
     */
    TokenLoss loss(float[] h, int tokens, int[] labels, float[] mask, double lossWeight) {
        boolean backward = !Double.isNaN(lossWeight);
        double[] loss = new double[tokens];
        // Both written whole, block by block, by products that overwrite them.
        float[] dh = backward ? Workspace.floats(tokens * hidden) : null;
        float[] logits = Workspace.floats(Math.min(TOKEN_BLOCK, tokens) * vocab);
        float[] fullBlock = logits;
        ForkJoinPool pool = Parallel.pool();
        float[] w = weight.values();
        // The weight, packed once for every block rather than by each block's products: Wᵀ [d,V] for the logits and,
        // for the backward, W [V,d] for dh (the same bits; at V 32 000, d 256, 32 MiB each).
        try (Gemm.PackedB wt = Gemm.packB(pool, true, vocab, hidden, w, 0, hidden);
             Gemm.PackedB wn = backward ? Gemm.packB(pool, false, hidden, vocab, w, 0, hidden) : null) {
            for (int t0 = 0; t0 < tokens; t0 += TOKEN_BLOCK) {
                int rows = Math.min(TOKEN_BLOCK, tokens - t0);
                if (rows * vocab != logits.length) {
                    logits = new float[rows * vocab]; // the last, shorter block
                }
                float[] block = logits;
                int[] blockLabels = Arrays.copyOfRange(labels, t0, t0 + rows);
                CrossEntropy.Result ce = new CrossEntropy.Result(new double[rows], new double[rows]);
                Gemm.parallelSgemm(pool, false, rows, 1f, h, t0 * hidden, hidden, wt, 0f, block, 0, vocab);
                // With the backward, each row's gradient is written over its logits right after its loss.
                double[] weights = backward ? tokenWeights(mask, t0, rows, lossWeight) : null;
                try {
                    Parallel.forBlocks(rows, LOSS_GRAIN, (from, to) -> {
                        if (weights != null) {
                            CrossEntropy.forwardBackward(block, blockLabels, vocab, weights, ce, block, from, to);
                        } else {
                            CrossEntropy.forward(block, blockLabels, vocab, from, to, ce);
                        }
                    });
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("the logits of tokens " + t0 + " … " + (t0 + rows - 1)
                            + " (rows counted from the first): " + e.getMessage(), e);
                }
                System.arraycopy(ce.loss(), 0, loss, t0, rows);
                if (backward) {
                    Gemm.parallelSgemm(pool, false, rows, 1f, block, 0, vocab, wn, 0f, dh, t0 * hidden, hidden);
                    Parallel.gemm(true, false, vocab, hidden, rows, 1f, block, 0, vocab, h, t0 * hidden, hidden, 1f,
                            weight.grads(), 0, hidden);
                }
            }
        }
        Workspace.release(fullBlock);
        double[] perToken = new double[tokens];
        for (int t = 0; t < tokens; t++) {
            perToken[t] = mask[t] != 0f ? loss[t] : 0.0;
        }
        return new TokenLoss(perToken, LossReport.of(loss, mask), dh);
    }

    /** {@code mask[t0 + r] · lossWeight} for the {@code rows} tokens of a block. */
    private static double[] tokenWeights(float[] mask, int t0, int rows, double lossWeight) {
        double[] weights = new double[rows];
        for (int r = 0; r < rows; r++) {
            weights[r] = mask[t0 + r] * lossWeight;
        }
        return weights;
    }
}
