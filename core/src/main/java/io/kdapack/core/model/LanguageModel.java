package io.kdapack.core.model;

import io.kdapack.core.nn.Parameter;
import java.util.List;

/**
 * A trainable language model as the training loop sees it: parameters by Hugging Face name, and one
 * forward (and optionally backward) pass over a micro-batch with the loss of architecture §4 computed inside.
 */
public interface LanguageModel {

    /** Every trainable tensor, in a fixed order (the order of checkpoints and of gradient-norm sums). */
    List<Parameter> parameters();

    /** Multi-token prediction depth (0 = off). */
    int mtpDepth();

    /**
     * Forward pass, loss, and — when {@code lossWeights} is not null — backward pass adding into the
     * parameters' gradients the gradient of {@code Σ_t w·ce_t·mask_t + Σ_t w_mtp·ce_mtp_t·mask_mtp_t}.
     *
     * @param batch       the micro-batch
     * @param lossWeights per-token weights of the main and MTP cross-entropy (from {@code LossScaling}), or
     *                    null for a forward pass only
     */
    Output run(MicroBatch batch, LossWeights lossWeights);

    /**
     * @param tokenWeight    weight of each main-loss token's cross-entropy
     * @param mtpTokenWeight weight of each MTP-loss token's cross-entropy (ignored without MTP)
     */
    record LossWeights(double tokenWeight, double mtpTokenWeight) {
    }

    /**
     * @param perTokenLoss    {@code [B·L]} main cross-entropy per token (0 where masked)
     * @param lossSum         {@code Σ ce·mask}
     * @param lossCount       {@code Σ mask}
     * @param mtpPerTokenLoss {@code [B·L]} MTP cross-entropy per token (0 where its rolled mask is 0), null without MTP
     * @param mtpLossSum      {@code Σ ce_mtp·mask_mtp}
     * @param mtpLossCount    {@code Σ mask_mtp}
     */
    record Output(double[] perTokenLoss, double lossSum, long lossCount,
                  double[] mtpPerTokenLoss, double mtpLossSum, long mtpLossCount) {
    }
}
