package io.kdapack.bench;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.model.BatchLayout;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.optim.NamedParameter;
import java.util.List;

/**
 * The useful floating-point operations of one training step of the hybrid model (forward and backward), the
 * numerator of {@code bench model}'s {@code model_gflops} and {@code mfu}. Only matrix products count; norms,
 * activations, the short convolutions, rotary embedding, softmax and the loss do not:
 *
 * <ul>
 *   <li>every projection, a 2-D weight {@code [out, in]}: {@code 6·T·out·in} (forward {@code 2·T·out·in}, backward
 *       the same for the input gradient and for the weight gradient), {@code T} the tokens of the batch. The LM head
 *       counts once per head it serves (the main one and each MTP depth); the embedding lookup counts nothing, unless
 *       tied to the head. Every other 2-D parameter of the model is a projection.</li>
 *   <li>full attention, per layer (the MTP layer's included) and head: {@code 6·(P+R+Dv)·pairs}, {@code pairs} the
 *       causal query–key pairs inside each document ({@code l(l+1)/2} for a document of {@code l} tokens): forward
 *       {@code Q·Kᵀ} and {@code P·V}, backward four products of the same sizes.</li>
 *   <li>each KDA layer: the chunked op's forward and backward, counted as {@code bench kda} counts it
 *       ({@link KdaBenchmark#chunkedFlops}, in its training case: no initial or final states; without the
 *       recomputation a backward may do: useful work only).</li>
 * </ul>
 */
public final class ModelFlops {

    private ModelFlops() {
    }

    /**
     * @param parameters the model's parameters (their shapes give the projections)
     * @param layout     where the batch's documents are
     */
    public static double trainingStep(ModelConfig config, List<? extends NamedParameter> parameters,
                                      BatchLayout layout) {
        double tokens = layout.tokens();
        int heads = 1 + config.mtp().depth();
        double projections = 0;
        for (NamedParameter p : parameters) {
            int[] shape = p.shape();
            if (shape.length != 2) {
                continue;
            }
            double size = (double) shape[0] * shape[1];
            if (p.name().equals("model.embed_tokens.weight")) {
                projections += config.tieWordEmbeddings() ? heads * size : 0;
            } else if (p.name().equals("lm_head.weight")) {
                projections += heads * size;
            } else {
                projections += size;
            }
        }
        double total = 6 * tokens * projections;

        int mlaLayers = config.mtp().depth();
        int kdaLayers = 0;
        for (int i = 0; i < config.numLayers(); i++) {
            if (config.isFullAttention(i)) {
                mlaLayers++;
            } else {
                kdaLayers++;
            }
        }
        var mla = config.mla();
        total += mlaLayers * 6.0 * mla.numHeads() * (mla.qkNopeHeadDim() + mla.qkRopeHeadDim() + mla.vHeadDim())
                * causalPairs(layout.documents());
        var kda = config.kda();
        total += kdaLayers * KdaBenchmark.chunkedFlops(layout.recurrence(), kda.numVHeads(), kda.headDim(),
                kda.headDim(), false, false);
        return total;
    }

    /** {@code Σ l(l+1)/2} over the sequences. */
    static double causalPairs(Segments segments) {
        double pairs = 0;
        for (int n = 0; n < segments.count(); n++) {
            double l = segments.length(n);
            pairs += l * (l + 1) / 2;
        }
        return pairs;
    }
}
