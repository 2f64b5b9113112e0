package io.kdapack.bench;

import io.kdapack.bench.InterleavedTiming;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaRecurrent;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.model.MtpConfig;
import io.kdapack.core.model.SequenceState;
import io.kdapack.core.nn.Parameter;
import io.kdapack.inference.InferenceEngine;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Inference throughput of one model configuration on the CPU ({@code kdapack bench generate}), random weights:
 *
 * <ul>
 *   <li>prefill of {@code prompts} prompts of mixed lengths (uniform in {@code [1, 2·mean − 1]}) packed into one
 *       call, against the same prompts one call each (interleaved run by run; {@code prefill_packed_speedup} is the
 *       ratio of their times), and packed as the engine packs them, into calls of at most
 *       {@link InferenceEngine#prefillCallTokens} tokens (a budget of activation floats over the width) ({@code prefill_engine_speedup});</li>
 *   <li>decode tokens/s with 1, 8 and 64 sequences (by default) (each prefilled with a 64-token prompt, then {@code steps} batched
 *       steps), and the latency of one step (one token for every sequence) at its p50 and p99;</li>
 *   <li>state bytes per sequence after 1k and 8k tokens (KDA part constant, MLA part growing);</li>
 *   <li>decode at batch 1 against the memory-bandwidth bound: the weight bytes a token reads (every weight but the
 *       embedding table, of which one row; MTP is not run) over the read bandwidth measured here on an array far
 *       larger than the caches.</li>
 * </ul>
 */
public final class GenerateBenchmark {
    private static final int DECODE_PROMPT = 64;

    /**
     * @param prompts        prompts of the prefill measurement
     * @param meanPrompt     their mean length
     * @param steps          decode steps per measurement
     * @param decodeBatches  concurrent sequences of the decode measurements (1, 8, 64); the first is the one compared
     *                       with the bandwidth bound
     */
    public record Config(ModelConfig model, int prompts, int meanPrompt, int steps, int[] decodeBatches, int threads,
                         int warmUp, int repeats, long seed) {
        public Config {
            if (prompts < 1 || meanPrompt < 1 || steps < 1 || threads < 1 || warmUp < 0 || repeats < 1) {
                throw new IllegalArgumentException("prompts, mean prompt, steps, threads and repeats must be >= 1 and "
                        + "warm-up >= 0");
            }
            if (decodeBatches.length == 0 || Arrays.stream(decodeBatches).anyMatch(b -> b < 1)) {
                throw new IllegalArgumentException("decode batches must be >= 1, got " + Arrays.toString(decodeBatches));
            }
        }
    }

    private GenerateBenchmark() {
    }

    /**
     * The larger configuration of the benchmark: d = 256, 8 layers (6 KDA with 4 heads of 64, 2 MLA with 4 heads,
     * latent 128, rope 32), MLP 704, vocabulary 4096 — about 9 M weights, 35 MB, beyond this machine's L2 and L3 slices.
     */
    public static ModelConfig larger() {
        return new ModelConfig(4096, 256, 8, 4, 704, 1e-6, false, new KdaConfig(4, 4, 64, 4, null, 1e-5),
                new MlaConfig(4, 128, 128, 32, 32, 32, 10000.0), new MtpConfig(0, 0.1), null);
    }

    public static Map<String, Object> run(Config c) {
        HybridModel model = new HybridModel(c.model(), new KdaChunked(c.threads()), true);
        model.initialize(c.seed());
        KdaRecurrent decodeOp = new KdaRecurrent(c.threads());
        Random random = new Random(c.seed());
        int vocab = c.model().vocabSize();

        int[][] prompts = new int[c.prompts()][];
        long promptTokens = 0;
        for (int i = 0; i < prompts.length; i++) {
            prompts[i] = random.ints(1 + random.nextInt(2 * c.meanPrompt() - 1), 0, vocab).toArray();
            promptTokens += prompts[i].length;
        }
        List<int[][]> groups = groups(prompts, InferenceEngine.prefillCallTokens(c.model()));
        double[] prefill = InterleavedTiming.medians(c.warmUp(), c.repeats(),
                () -> model.extend(prompts, fresh(model, prompts.length), model.kdaBackend()),
                () -> {
                    for (int[] prompt : prompts) {
                        model.extend(new int[][] {prompt}, fresh(model, 1), model.kdaBackend());
                    }
                },
                () -> {
                    for (int[][] group : groups) {
                        model.extend(group, fresh(model, group.length), model.kdaBackend());
                    }
                });

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("weights", weightCount(model));
        out.put("prompts", prompts.length);
        out.put("prompt_tokens", promptTokens);
        out.put("prefill_packed_tokens_per_s", promptTokens / prefill[0]);
        out.put("prefill_alone_tokens_per_s", promptTokens / prefill[1]);
        out.put("prefill_packed_speedup", prefill[1] / prefill[0]);
        out.put("prefill_engine_call_tokens", InferenceEngine.prefillCallTokens(c.model()));
        out.put("prefill_engine_calls", groups.size());
        out.put("prefill_engine_tokens_per_s", promptTokens / prefill[2]);
        out.put("prefill_engine_speedup", prefill[1] / prefill[2]);

        Map<String, Object> decode = new LinkedHashMap<>();
        double batchOneSecondsPerToken = 0;
        for (int batch : c.decodeBatches()) {
            int[][] starts = new int[batch][];
            for (int i = 0; i < batch; i++) {
                starts[i] = random.ints(DECODE_PROMPT, 0, vocab).toArray();
            }
            SequenceState[] prefilled = fresh(model, batch);
            model.extend(starts, prefilled, model.kdaBackend());
            int[][] next = new int[batch][1];
            List<Double> stepSeconds = new ArrayList<>();
            for (int round = 0; round < c.warmUp() + c.repeats(); round++) {
                SequenceState[] states = new SequenceState[batch];
                for (int i = 0; i < batch; i++) {
                    states[i] = prefilled[i].copy();
                }
                for (int s = 0; s < c.steps(); s++) {
                    long t0 = System.nanoTime();
                    float[] logits = model.extend(next, states, decodeOp);
                    double seconds = (System.nanoTime() - t0) * 1e-9;
                    for (int i = 0; i < batch; i++) {
                        next[i][0] = argMax(logits, i * vocab, vocab);
                    }
                    if (round >= c.warmUp()) {
                        stepSeconds.add(seconds);
                    }
                }
            }
            double[] sorted = stepSeconds.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            double total = Arrays.stream(sorted).sum();
            Map<String, Object> figures = new LinkedHashMap<>();
            figures.put("tokens_per_s", batch * sorted.length / total);
            figures.put("step_latency_p50_ms", 1e3 * percentile(sorted, 0.50));
            figures.put("step_latency_p99_ms", 1e3 * percentile(sorted, 0.99));
            decode.put("batch_" + batch, figures);
            if (batch == c.decodeBatches()[0]) {
                batchOneSecondsPerToken = percentile(sorted, 0.50) / batch;
            }
        }
        out.put("decode", decode);

        long kdaBytes = model.stateBytes(0);
        out.put("state_bytes_kda_per_sequence", kdaBytes);
        out.put("state_bytes_at_1k_tokens", model.stateBytes(1024));
        out.put("state_bytes_at_8k_tokens", model.stateBytes(8192));

        long bytesPerToken = weightBytesPerToken(model);
        double bandwidth = readBandwidth();
        double boundSeconds = bytesPerToken / bandwidth;
        out.put("weight_bytes_per_token", bytesPerToken);
        out.put("read_bandwidth_gb_per_s", bandwidth / 1e9);
        out.put("decode_batch1_ms_per_token", 1e3 * batchOneSecondsPerToken);
        out.put("bandwidth_bound_ms_per_token", 1e3 * boundSeconds);
        out.put("decode_batch1_over_bandwidth_bound", batchOneSecondsPerToken / boundSeconds);
        return out;
    }

    /** The prompts in order, packed into calls of at most {@code budget} tokens as the engine packs them. */
    private static List<int[][]> groups(int[][] prompts, int budget) {
        List<int[][]> groups = new ArrayList<>();
        List<int[]> group = new ArrayList<>();
        int tokens = 0;
        for (int[] prompt : prompts) {
            if (!group.isEmpty() && tokens + prompt.length > budget) {
                groups.add(group.toArray(new int[0][]));
                group.clear();
                tokens = 0;
            }
            group.add(prompt);
            tokens += prompt.length;
        }
        groups.add(group.toArray(new int[0][]));
        return groups;
    }

    private static SequenceState[] fresh(HybridModel model, int count) {
        SequenceState[] states = new SequenceState[count];
        for (int i = 0; i < count; i++) {
            states[i] = model.newSequence();
        }
        return states;
    }

    private static long weightCount(HybridModel model) {
        return model.parameters().stream().filter(p -> !p.name().startsWith("model.mtp.")).mapToLong(Parameter::size)
                .sum();
    }

    /** Bytes of weights one decode token reads: all but MTP's and the embedding table's (one row of it). */
    private static long weightBytesPerToken(HybridModel model) {
        long floats = 0;
        for (Parameter p : model.parameters()) {
            if (p.name().startsWith("model.mtp.")) {
                continue;
            }
            floats += p.name().equals("model.embed_tokens.weight") ? p.shape()[1] : p.size();
        }
        if (model.config().tieWordEmbeddings()) {
            floats += (long) model.config().vocabSize() * model.config().hiddenSize(); // the LM head reads it whole
        }
        return 4 * floats;
    }

    /** Bytes per second of a sequential sum over 128 MiB of floats (best of three, one thread). */
    static double readBandwidth() {
        float[] big = new float[32 << 20];
        Arrays.fill(big, 1f);
        double best = Double.MAX_VALUE;
        float sink = 0;
        for (int r = 0; r < 3; r++) {
            long t0 = System.nanoTime();
            sink += VectorSum.sum(big);
            best = Math.min(best, (System.nanoTime() - t0) * 1e-9);
        }
        if (sink == 0) {
            throw new IllegalStateException("unreachable: the sum of ones is positive");
        }
        return 4.0 * big.length / best;
    }

    private static double percentile(double[] sorted, double q) {
        int index = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }

    private static int argMax(float[] logits, int offset, int vocab) {
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logits[offset + i] > logits[offset + best]) {
                best = i;
            }
        }
        return best;
    }
}
