package io.kdapack.api.jobs;

import io.kdapack.config.KdapackConfig;
import io.kdapack.config.TrainConfig;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.training.pipeline.MemoryEstimate;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The peak heap of a training job, estimated from its configuration before anything is allocated, for the server's
 * admission control ({@code server.memory_budget}). An upper-leaning estimate, not a measurement; what it counts:
 *
 * <ul>
 *   <li><b>weights</b>: P parameters (docs/model.md, "Weight names and shapes") × 4 bytes × 5: values, gradients,
 *       AdamW's two moments, and a checkpoint's serialised copy;</li>
 *   <li><b>activations</b> of one micro-batch of N = B·L tokens, kept for the backward pass, times
 *       {@link #BACKWARD_FACTOR} for the backward pass's temporaries: per token and layer the norms, the SwiGLU MLP
 *       (4·I), the KDA projections before and after their convolutions, the gate, the kernel's per-chunk tape and a
 *       state [HV,K,V] per 64 tokens; per MLA layer the query/key/value projections and the attention scores and their
 *       gradients, Hm·L² a row at worst (one document filling the row); the logits, softmax and their gradient
 *       (3·N·V_voc, again for the MTP head);</li>
 *   <li><b>data</b>: Megatron's sample order (12 bytes a sample, steps·B·M samples), the document order (4 bytes per
 *       document and epoch; epochs from the dataset's token count when its index can be read), the index's sizes and
 *       pointers (12 bytes a document), and the prefetched micro-batches.</li>
 * </ul>
 */
final class JobMemoryModel {
    /** Backward temporaries (gradients of activations, scratch buffers) on top of the forward tape. */
    static final double BACKWARD_FACTOR = 2.0;
    private static final int CHUNK = 64;
    private static final int PREFETCH = 2;

    private JobMemoryModel() {
    }

    /** @param dataset the job's dataset prefix (its index is read for the document and token counts, if it can be) */
    static MemoryEstimate estimate(KdapackConfig config, Path dataset) {
        ModelConfig m = config.model();
        TrainConfig t = config.train();
        double embedding = (double) m.vocabSize() * m.hiddenSize() * (m.tieWordEmbeddings() ? 1 : 2);
        double parameters = parameterCount(m);
        double weightBytes = parameters * 4 * 5;

        double tokens = (double) t.microBatchSize() * t.seqLength();
        double perToken = 0;
        double attentionScores = 0;
        for (int layer = 0; layer < m.numLayers(); layer++) {
            perToken += commonActivations(m);
            if (m.isFullAttention(layer)) {
                perToken += mlaActivations(m.mla());
                attentionScores += 2.0 * m.mla().numHeads() * t.seqLength(); // per token: a row of scores and grads
            } else {
                perToken += kdaActivations(m.kda());
            }
        }
        double logits = 3.0 * m.vocabSize() * (1 + m.mtp().depth());
        if (m.mtp().depth() > 0) {
            perToken += commonActivations(m) + mlaActivations(m.mla()) + 4.0 * m.hiddenSize();
            attentionScores += 2.0 * m.mla().numHeads() * t.seqLength();
        }
        double activationBytes = BACKWARD_FACTOR * 4 * tokens * (perToken + attentionScores + logits);

        double samples = (double) t.steps() * t.globalBatchSize();
        double documents = 0;
        double epochs = 1;
        try {
            IndexedDataset index = IndexedDataset.open(dataset);
            documents = index.documentCount();
            epochs = Math.max(1, Math.ceil(samples * (t.seqLength() + 1) / Math.max(1, index.tokenCount())));
        } catch (Exception | OutOfMemoryError e) {
            // an unreadable dataset fails the job when its loader opens it; only the sample order is counted here
        }
        double batchBytes = (PREFETCH + t.numMicrobatches()) * (double) t.microBatchSize() * (t.seqLength() + 1) * 4 * 8;
        double dataBytes = 12 * samples + 4 * documents * epochs + 12 * documents + batchBytes;

        double total = weightBytes + activationBytes + dataBytes;
        String explanation = String.format(Locale.ROOT,
                "weights, gradients and optimizer state %s (%.3g parameters: model.hidden_size = %d, "
                        + "model.intermediate_size = %d, model.num_layers = %d, model.vocab_size = %d); activations of "
                        + "a micro-batch %s (train.micro_batch_size = %d, train.seq_length = %d); sample order and "
                        + "batches %s (train.steps = %d, %d samples a step)",
                MemoryEstimate.format(bytes(weightBytes)), parameters, m.hiddenSize(), m.intermediateSize(),
                m.numLayers(), m.vocabSize(), MemoryEstimate.format(bytes(activationBytes)), t.microBatchSize(),
                t.seqLength(), MemoryEstimate.format(bytes(dataBytes)), t.steps(), t.globalBatchSize());
        String largestKey;
        if (weightBytes >= activationBytes && weightBytes >= dataBytes) {
            largestKey = embedding > parameters / 2 ? "model.vocab_size" : "model.hidden_size";
        } else if (activationBytes >= dataBytes) {
            largestKey = t.seqLength() >= t.microBatchSize() ? "train.seq_length" : "train.micro_batch_size";
        } else {
            largestKey = "train.steps";
        }
        return new MemoryEstimate(bytes(total), largestKey, explanation);
    }

    /** The model's parameters P, every tensor of docs/model.md's table (a double: configurations may overflow a long). */
    static double parameterCount(ModelConfig m) {
        double embedding = (double) m.vocabSize() * m.hiddenSize() * (m.tieWordEmbeddings() ? 1 : 2);
        double parameters = embedding + m.hiddenSize() + mtpParameters(m);
        for (int layer = 0; layer < m.numLayers(); layer++) {
            parameters += layerParameters(m, m.isFullAttention(layer));
        }
        return parameters;
    }

    private static long bytes(double value) {
        return value >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) Math.ceil(value);
    }

    private static double layerParameters(ModelConfig m, boolean fullAttention) {
        double d = m.hiddenSize();
        double common = 2 * d + 3.0 * m.intermediateSize() * d;
        return common + (fullAttention ? mlaParameters(m.mla(), d) : kdaParameters(m.kda(), d));
    }

    private static double kdaParameters(KdaConfig kda, double d) {
        double qk = (double) kda.numHeads() * kda.headDim();
        double v = (double) kda.numVHeads() * kda.headDim();
        double head = kda.headDim();
        return 2 * qk * d + v * d                   // q, k, v projections
                + (2 * qk + v) * kda.convSize()     // short convolutions
                + head * d + v * head               // f_proj (V = K per head)
                + kda.numVHeads() * d               // b_proj
                + kda.numVHeads() + v               // A_log, dt_bias
                + head * d + v * head + v           // g_proj
                + head + d * v;                     // o_norm, o_proj
    }

    private static double mlaParameters(MlaConfig mla, double d) {
        double heads = mla.numHeads();
        double qk = mla.qkNopeHeadDim() + mla.qkRopeHeadDim();
        double query = mla.qLoraRank() == null ? heads * qk * d
                : mla.qLoraRank() * d + mla.qLoraRank() + heads * qk * mla.qLoraRank();
        return query + (mla.kvLoraRank() + mla.qkRopeHeadDim()) * d + mla.kvLoraRank()
                + heads * (mla.qkNopeHeadDim() + mla.vHeadDim()) * mla.kvLoraRank() + d * heads * mla.vHeadDim();
    }

    private static double mtpParameters(ModelConfig m) {
        if (m.mtp().depth() == 0) {
            return 0;
        }
        double d = m.hiddenSize();
        return 2 * d + 2 * d * d + layerParameters(m, true) + d;
    }

    /** Floats a token keeps in any layer: residuals, two norms, the SwiGLU MLP. */
    private static double commonActivations(ModelConfig m) {
        return 6.0 * m.hiddenSize() + 4.0 * m.intermediateSize();
    }

    private static double kdaActivations(KdaConfig kda) {
        double qk = (double) kda.numHeads() * kda.headDim();
        double v = (double) kda.numVHeads() * kda.headDim();
        double head = kda.headDim();
        double projections = 3 * (2 * qk + v);         // before and after each convolution, and its activation
        double gates = 4 * v + 2 * head + kda.numVHeads(); // gate input, decay, output gate, beta
        double tape = kda.numVHeads() * (2.0 * head + 2 * CHUNK) + v * head / CHUNK; // W, U, A_kk, A_qk, states
        return projections + gates + tape + 3 * v;     // o, o_norm, gated output
    }

    private static double mlaActivations(MlaConfig mla) {
        double heads = mla.numHeads();
        double qk = mla.qkNopeHeadDim() + mla.qkRopeHeadDim();
        return 2 * (heads * qk + mla.kvLoraRank() + mla.qkRopeHeadDim() + heads * (qk + mla.vHeadDim())
                + heads * mla.vHeadDim());
    }
}
