package io.kdapack.core.model;

import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.model.MtpConfig;
import io.kdapack.core.nn.Parameter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/** Tiny configurations, random weights of test size and packed micro-batches for the model tests. */
public final class TinyModels {
    static final int VOCAB = 20;

    private TinyModels() {
    }

    /**
     * d = 16, two layers (0: KDA with H = 1, HV = 2 grouped value heads, K = V = 8, conv 4; 1: MLA with a query low
     * rank), MTP depth 1.
     */
    static ModelConfig config(Double lowerBound, boolean tied, int mtpDepth) {
        return new ModelConfig(VOCAB, 16, 2, 2, 24, 1e-6, tied, new KdaConfig(1, 2, 8, 4, lowerBound, 1e-5),
                new MlaConfig(2, 8, 8, 4, 4, 4, 10000.0), new MtpConfig(mtpDepth, 0.1), null);
    }

    static ModelConfig config() {
        return config(null, false, 1);
    }

    static HybridModel model(ModelConfig config, boolean isolation, long seed, int kdaThreads) {
        HybridModel model = new HybridModel(config, new KdaChunked(kdaThreads), isolation);
        model.initialize(seed);
        enlarge(model.parameters(), seed);
        return model;
    }

    /**
     * Replaces the 0.02-std projections by O(1) signals (std 0.35, embeddings 1) and perturbs the norm gains around 1,
     * so that every path carries a gradient well above round-off and a leak between documents is visible. dt_bias
     * becomes standard normal (FLA's values, around −5, put the gate where softplus is nearly flat and its gradient
     * near round-off); A_log and the convolutions keep their initialisation.
     */
    public static void enlarge(List<Parameter> parameters, long seed) {
        Random random = new Random(seed ^ 0x5DEECE66DL);
        for (Parameter p : parameters) {
            String name = p.name();
            if (name.endsWith("A_log") || name.contains("conv1d")) {
                continue;
            }
            if (name.endsWith("norm.weight")) {
                for (int i = 0; i < p.size(); i++) {
                    p.values()[i] = 1f + (float) (0.1 * random.nextGaussian());
                }
            } else {
                p.initNormal(random, name.contains("embed_tokens") || name.endsWith("dt_bias") ? 1.0 : 0.35);
            }
        }
    }

    static void zeroGrads(HybridModel model) {
        model.parameters().forEach(Parameter::zeroGrad);
    }

    /** Copies of every gradient, in parameter order. */
    static List<float[]> grads(HybridModel model) {
        List<float[]> out = new ArrayList<>();
        for (Parameter p : model.parameters()) {
            out.add(p.grads().clone());
        }
        return out;
    }

    /** A document at row {@code row}, tokens {@code [start, start+length)} of the row. */
    record Doc(int row, int start, int length) {
    }

    /**
     * A packed batch: rows of {@code length} tokens, each row holding the given document lengths back to back then
     * padding. Tokens are random; labels are the next token of the row (at a document's last position that is the
     * next document's first token, as in Megatron's samples); the loss mask is 1 inside documents except one masked
     * token per document of 4+ tokens, 0 at padding; positions restart per document; MTP targets rolled within
     * documents.
     */
    static Packed packed(long seed, int length, int[]... rows) {
        Random random = new Random(seed);
        int size = rows.length * length;
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] mask = new float[size];
        int[] positions = new int[size];
        int[] segmentIds = new int[size];
        List<Doc> docs = new ArrayList<>();
        int[] row = new int[length + 1];
        for (int b = 0; b < rows.length; b++) {
            for (int i = 0; i <= length; i++) {
                row[i] = random.nextInt(VOCAB);
            }
            int at = 0;
            int id = 1;
            for (int docLength : rows[b]) {
                docs.add(new Doc(b, at, docLength));
                int masked = docLength >= 4 ? random.nextInt(docLength) : -1;
                for (int i = 0; i < docLength; i++) {
                    int p = b * length + at + i;
                    segmentIds[p] = id;
                    positions[p] = i;
                    mask[p] = i == masked ? 0f : 1f;
                }
                at += docLength;
                id++;
            }
            if (at > length) {
                throw new IllegalArgumentException("row " + b + " holds " + at + " > " + length + " tokens");
            }
            for (int i = 0; i < length; i++) {
                tokens[b * length + i] = row[i];
                labels[b * length + i] = row[i + 1];
            }
        }
        return new Packed(batch(rows.length, length, tokens, labels, mask, positions, segmentIds), docs);
    }

    record Packed(MicroBatch batch, List<Doc> docs) {
        /** Document {@code n} alone in a batch of one row of its own length (same tokens, labels and mask). */
        MicroBatch alone(int n) {
            Doc d = docs.get(n);
            int from = d.row() * batch.length() + d.start();
            int to = from + d.length();
            int[] ones = new int[d.length()];
            Arrays.fill(ones, 1);
            return TinyModels.batch(1, d.length(), Arrays.copyOfRange(batch.tokens(), from, to),
                    Arrays.copyOfRange(batch.labels(), from, to), Arrays.copyOfRange(batch.lossMask(), from, to),
                    Arrays.copyOfRange(batch.positionIds(), from, to), ones);
        }

        /** Flat index of token {@code i} of document {@code n} in the packed batch. */
        int index(int n, int i) {
            Doc d = docs.get(n);
            return d.row() * batch.length() + d.start() + i;
        }
    }

    /** A micro-batch with MTP targets and mask rolled left by one within each segment (0 at its last position). */
    static MicroBatch batch(int rows, int length, int[] tokens, int[] labels, float[] mask, int[] positions,
                            int[] segmentIds) {
        int[] mtpLabels = new int[tokens.length];
        float[] mtpMask = new float[tokens.length];
        for (int b = 0; b < rows; b++) {
            for (int i = 0; i + 1 < length; i++) {
                int p = b * length + i;
                if (segmentIds[p] != 0 && segmentIds[p + 1] == segmentIds[p]) {
                    mtpLabels[p] = labels[p + 1];
                    mtpMask[p] = mask[p + 1];
                }
            }
        }
        return new MicroBatch(rows, length, tokens, labels, mask, positions, segmentIds, mtpLabels, mtpMask);
    }

    /** {@code ‖actual − expected‖ / ‖expected‖} (absolute norm when the reference is zero). */
    static double relativeError(double[] actual, double[] expected) {
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < actual.length; i++) {
            diff += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            ref += expected[i] * expected[i];
        }
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }

    static double relativeError(float[] actual, float[] expected) {
        double[] a = new double[actual.length];
        double[] e = new double[expected.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = actual[i];
            e[i] = expected[i];
        }
        return relativeError(a, e);
    }
}
