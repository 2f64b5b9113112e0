package io.kdapack.core;

import io.kdapack.core.conv.Activation;
import io.kdapack.core.conv.ShortConv;
import io.kdapack.core.conv.ShortConvGradients;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.conv.ShortConvOutputs;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.core.kda.KdaRecurrent;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import io.kdapack.core.linalg.ExpKernels;
import io.kdapack.core.linalg.Gemm;
import io.kdapack.core.linalg.VectorWidth;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.model.MtpConfig;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.optim.AdamW;
import io.kdapack.core.optim.AdamWOptions;
import io.kdapack.core.optim.GradientClipping;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;

/**
 * Runs every family of CPU kernels forward and backward on awkward sizes (token counts that are not multiples of
 * 64, tails of 1, 7 and 207, K ≠ V, HV = 3H, strong decays and hard resets) and prints the lane count and one
 * SHA-256 digest per result, as {@code lanes N} and {@code digest NAME HEX} lines, for {@link VectorWidthForkTest} to
 * compare across JVMs started with different vector widths. The whole set runs {@value #ROUNDS} times, so that the
 * later rounds run compiled code; a result that changes between rounds is an error (exit code 1).
 */
public final class VectorWidthProbe {
    static final int ROUNDS = 3;

    private final Map<String, String> digests = new LinkedHashMap<>();

    private VectorWidthProbe() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> first = null;
        try (ForkJoinPool pool = new ForkJoinPool(2)) {
            for (int round = 0; round < ROUNDS; round++) {
                VectorWidthProbe probe = new VectorWidthProbe();
                pool.submit(probe::runAll).get();
                if (first == null) {
                    first = probe.digests;
                } else if (!first.equals(probe.digests)) {
                    System.out.println("unstable: round " + round + " differs from round 0");
                    System.exit(1);
                }
            }
        }
        System.out.println("lanes " + VectorWidth.LANES);
        first.forEach((name, hex) -> System.out.println("digest " + name + " " + hex));
    }

    private void runAll() {
        // T = 234 in five documents (one empty), H = 1, HV = 3, K = 20, V = 12: every width has tails.
        kda("kda.softplus", 1, new int[] {1, 7, 207, 0, 19}, 1, 3, 20, 12,
                KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f), 0, 0.0);
        // Strong decays (the pairwise path of the diagonal blocks) and hard resets, K = 32, V = 48.
        kda("kda.strong", 2, new int[] {130, 33}, 1, 3, 32, 48, KdaOptions.plain(), 4f, 0.05);
        // K = 7, V = 5: nothing but tails on 8 and 16 lanes.
        kda("kda.lowerbound", 3, new int[] {1, 7, 65}, 3, 3, 7, 5, KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f),
                0, 0.0);
        conv("conv.d207", 4, 207, new int[] {1, 7, 40});
        conv("conv.d7", 5, 7, new int[] {70, 0, 3});
        gemm("gemm", 6);
        expKernels("exp", 7);
        crossEntropy("crossEntropy", 8);
        model("model", 8);
    }

    private void kda(String name, long seed, int[] lengths, int h, int hv, int kd, int vd, KdaOptions options,
                     float decayScale, double hardResets) {
        Random rnd = new Random(seed);
        int[] cu = new int[lengths.length + 1];
        for (int n = 0; n < lengths.length; n++) {
            cu[n + 1] = cu[n] + lengths[n];
        }
        Segments segments = Varlen.fromCuSeqlens(cu, cu[lengths.length]);
        int t = segments.tokens();
        boolean gateInOp = options.gate() != KdaOptions.Gate.NONE;
        float[] q = normal(rnd, t * h * kd);
        float[] k = normal(rnd, t * h * kd);
        if (!options.qkL2Norm()) {
            unitRows(q, kd);
            unitRows(k, kd);
        }
        float[] g = normal(rnd, t * hv * kd);
        for (int i = 0; i < g.length; i++) {
            if (rnd.nextDouble() < hardResets) {
                g[i] = -1000f;
            } else if (!gateInOp) {
                g[i] = -0.05f - decayScale * Math.abs(g[i]);
            }
        }
        float[] beta = normal(rnd, t * hv);
        if (!options.betaSigmoid()) {
            for (int i = 0; i < beta.length; i++) {
                beta[i] = 1f / (1f + (float) Math.exp(-beta[i]));
            }
        }
        float[] aLog = gateInOp ? normal(rnd, hv) : null;
        float[] dtBias = gateInOp ? normal(rnd, hv * kd) : null;
        int states = segments.count() * hv * kd * vd;
        KdaInputs in = new KdaInputs(segments, h, hv, kd, vd, q, k, normal(rnd, t * hv * vd), g, beta, aLog, dtBias,
                normal(rnd, states));
        float[] dO = normal(rnd, t * hv * vd);
        float[] dHt = normal(rnd, states);
        for (KdaBackend backend : new KdaBackend[] {new KdaChunked(2), new KdaRecurrent(2)}) {
            String prefix = name + "." + backend.name() + ".";
            KdaBackend.KdaResult out = backend.forward(in, options);
            put(prefix + "o", out.o());
            put(prefix + "ht", out.ht());
            KdaBackend.KdaGradients d = backend.backward(in, options, dO, dHt);
            put(prefix + "dq", d.dq());
            put(prefix + "dk", d.dk());
            put(prefix + "dv", d.dv());
            put(prefix + "dg", d.dg());
            put(prefix + "dbeta", d.dBeta());
            put(prefix + "dh0", d.dH0());
            if (gateInOp) {
                put(prefix + "dA_log", d.dALog());
                put(prefix + "ddt_bias", d.dDtBias());
            }
        }
    }

    private void conv(String name, long seed, int channels, int[] lengths) {
        Random rnd = new Random(seed);
        int[] cu = new int[lengths.length + 1];
        for (int n = 0; n < lengths.length; n++) {
            cu[n + 1] = cu[n] + lengths[n];
        }
        Segments segments = Varlen.fromCuSeqlens(cu, cu[lengths.length]);
        int width = 4;
        ShortConvInputs in = new ShortConvInputs(segments, channels, width, normal(rnd, segments.tokens() * channels),
                normal(rnd, channels * width), normal(rnd, channels), normal(rnd, segments.count() * channels * width),
                Activation.SILU);
        ShortConvOutputs out = ShortConv.forward(in);
        put(name + ".y", out.y());
        put(name + ".final_state", out.finalState());
        ShortConvGradients d = ShortConv.backward(in, normal(rnd, out.y().length),
                normal(rnd, out.finalState().length));
        put(name + ".dx", d.dx());
        put(name + ".dweight", d.dweight());
        put(name + ".dbias", d.dbias());
        put(name + ".dinitial_state", d.dinitialState());
    }

    /** Products with dimensions of 1, 7 and 207 and k past one packed block, transposed or not, serial and parallel. */
    private void gemm(String name, long seed) {
        Random rnd = new Random(seed);
        // 207×7×207, 70×40×100 and 65×63×513 take the parallel path (the last with edges of every register tile and
        // three packed k blocks; 9×1031×40 two column blocks), 7×33×300 two packed k blocks, the rest the small-product path.
        int[][] shapes = {{207, 7, 207}, {70, 40, 100}, {65, 63, 513}, {9, 1031, 40}, {7, 33, 300}, {7, 207, 1}, {1, 7, 207},
            {207, 1, 7}, {7, 7, 7}};
        ForkJoinPool pool = ForkJoinTask.getPool(); // the probe's pool of two workers
        for (int[] s : shapes) {
            int m = s[0];
            int n = s[1];
            int k = s[2];
            for (int variant = 0; variant < 4; variant++) {
                boolean transA = (variant & 1) != 0;
                boolean transB = (variant & 2) != 0;
                float[] a = normal(rnd, m * k);
                float[] b = normal(rnd, k * n);
                float[] c = normal(rnd, m * n);
                float[] parallel = c.clone();
                Gemm.sgemm(transA, transB, m, n, k, 0.75f, a, 0, transA ? m : k, b, 0, transB ? k : n, 0.5f, c, 0, n);
                Gemm.parallelSgemm(pool, transA, transB, m, n, k, 0.75f, a, 0, transA ? m : k, b, 0, transB ? k : n,
                        0.5f, parallel, 0, n);
                String id = name + "." + m + "x" + n + "x" + k + (transA ? ".tA" : "") + (transB ? ".tB" : "");
                put(id, c);
                put(id + ".parallel", parallel);
            }
        }
    }

    /** Cross-entropy forward and backward with vocabularies of 7 (all tail), 37 and 1007 (16-blocks and a tail). */
    private void crossEntropy(String name, long seed) {
        Random rnd = new Random(seed);
        for (int vocab : new int[] {7, 37, 1007}) {
            int tokens = 5;
            float[] logits = normal(rnd, tokens * vocab);
            int[] labels = new int[tokens];
            double[] weights = new double[tokens];
            for (int t = 0; t < tokens; t++) {
                labels[t] = rnd.nextInt(vocab);
                weights[t] = t == 2 ? 0 : rnd.nextDouble();
            }
            io.kdapack.core.loss.CrossEntropy.Result r = io.kdapack.core.loss.CrossEntropy.forward(logits, labels, vocab);
            float[] grad = new float[logits.length];
            io.kdapack.core.loss.CrossEntropy.backward(logits, labels, vocab, r.logSumExp(), weights, grad);
            put(name + "." + vocab + ".loss", r.loss());
            put(name + "." + vocab + ".grad", grad);
        }
    }

    private void expKernels(String name, long seed) {
        Random rnd = new Random(seed);
        float[] z = new float[210];
        for (int i = 0; i < z.length; i++) {
            z[i] = (rnd.nextFloat() - 0.5f) * 180f;
        }
        float[] dy = normal(rnd, z.length);
        int length = 207;
        float[] exp = new float[length];
        float[] silu = new float[length];
        float[] dSilu = new float[length];
        ExpKernels.exp(z, 3, exp, 0, length);
        ExpKernels.silu(z, 3, silu, 0, length);
        ExpKernels.siluBackward(z, 3, dy, 3, dSilu, 0, length);
        put(name + ".exp", exp);
        put(name + ".silu", silu);
        put(name + ".silu_backward", dSilu);
    }

    /**
     * A small hybrid model with dimensions that fit no vector width (d = 20, SwiGLU 37, KDA H = 1, HV = 3, K = V = 12;
     * MLA with a query low rank; MTP) on a packed batch with documents of 1, 7 and 59 tokens: per-token losses and
     * every gradient, then the gradient norm and one AdamW step.
     */
    private void model(String name, long seed) {
        ModelConfig config = new ModelConfig(23, 20, 2, 2, 37, 1e-6, false, new KdaConfig(1, 3, 12, 4, null, 1e-5),
                new MlaConfig(2, 7, 9, 5, 4, 6, 10000.0), new MtpConfig(1, 0.1), null);
        HybridModel model = new HybridModel(config, new KdaChunked(2), true);
        model.initialize(seed);
        Random rnd = new Random(seed);
        for (Parameter p : model.parameters()) {
            if (!p.name().endsWith("A_log") && !p.name().contains("conv1d") && !p.name().endsWith("norm.weight")) {
                p.initNormal(rnd, 0.35); // O(1) signals, so that every path carries gradient above round-off
            }
        }
        MicroBatch batch = packedBatch(rnd, config.vocabSize(), 67, new int[] {1, 7, 59}, new int[] {60});
        LanguageModel.Output out = model.run(batch, new LanguageModel.LossWeights(1.0 / batch.lossTokens(),
                0.1 / batch.mtpLossTokens()));
        put(name + ".loss", out.perTokenLoss());
        put(name + ".mtp_loss", out.mtpPerTokenLoss());
        for (Parameter p : model.parameters()) {
            put(name + ".grad." + p.name(), p.grads());
        }
        double norm = GradientClipping.clipByGlobalNorm(model.parameters(), 1.0);
        put(name + ".grad_norm", new double[] {norm});
        new AdamW(new AdamWOptions(0.9, 0.95, 1e-8, 0.1)).step(model.parameters(), 1e-2);
        for (Parameter p : model.parameters()) {
            put(name + ".updated." + p.name(), p.values());
        }
    }

    /** Rows of {@code length} random tokens holding the given documents back to back, then padding; MTP rolled. */
    private static MicroBatch packedBatch(Random rnd, int vocab, int length, int[]... rows) {
        int size = rows.length * length;
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] mask = new float[size];
        int[] positions = new int[size];
        int[] segmentIds = new int[size];
        for (int b = 0; b < rows.length; b++) {
            int at = b * length;
            int id = 1;
            for (int docLength : rows[b]) {
                for (int i = 0; i < docLength; i++) {
                    segmentIds[at + i] = id;
                    positions[at + i] = i;
                    mask[at + i] = 1f;
                }
                at += docLength;
                id++;
            }
        }
        for (int p = 0; p < size; p++) {
            tokens[p] = rnd.nextInt(vocab);
            labels[p] = rnd.nextInt(vocab);
        }
        int[] mtpLabels = new int[size];
        float[] mtpMask = new float[size];
        for (int p = 0; p + 1 < size; p++) {
            if (segmentIds[p] != 0 && segmentIds[p + 1] == segmentIds[p] && (p + 1) % length != 0) {
                mtpLabels[p] = labels[p + 1];
                mtpMask[p] = mask[p + 1];
            }
        }
        return new MicroBatch(rows.length, length, tokens, labels, mask, positions, segmentIds, mtpLabels, mtpMask);
    }

    private void put(String name, float[] values) {
        ByteBuffer bytes = ByteBuffer.allocate(4 * values.length);
        for (float v : values) {
            bytes.putInt(Float.floatToRawIntBits(v));
        }
        digests.put(name, sha256(bytes.array()));
    }

    private void put(String name, double[] values) {
        ByteBuffer bytes = ByteBuffer.allocate(8 * values.length);
        for (double v : values) {
            bytes.putLong(Double.doubleToRawLongBits(v));
        }
        digests.put(name, sha256(bytes.array()));
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static float[] normal(Random rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }

    private static void unitRows(float[] x, int dim) {
        for (int r = 0; r < x.length / dim; r++) {
            double s = 0;
            for (int i = 0; i < dim; i++) {
                s += (double) x[r * dim + i] * x[r * dim + i];
            }
            float inv = (float) (1 / Math.sqrt(s));
            for (int i = 0; i < dim; i++) {
                x[r * dim + i] *= inv;
            }
        }
    }
}
