package io.kdapack.bench;

import io.kdapack.bench.InterleavedTiming;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.BatchLayout;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.training.MicroBatchAssembler;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;

/**
 * Training-step throughput of the hybrid model on the CPU ({@code kdapack bench model}): forward and forward+backward
 * of one packed micro-batch of random documents, with 1 thread and with {@code threads}, and the same step without
 * document isolation (its cost should be the same: isolation only moves where states restart). Each figure is the
 * median of several runs after warm-up runs, all in one process, the four measurements taking turns run by run
 * ({@link InterleavedTiming}), with the machine's matrix-product ceiling ({@link MatmulProbe}) as a fifth: the step's
 * useful flops ({@link ModelFlops}) over its time give {@code model_gflops}, and over the probe's rate {@code mfu}.
 * {@code machine_thread_speedup} ({@link ThreadScaling}), measured right after, bounds {@code thread_speedup}.
 */
public final class ModelBenchmark {

    /**
     * @param model         the architecture
     * @param rows          B
     * @param length        L
     * @param meanDocLength documents have lengths uniform in {@code [1, 2·mean − 1]}, cut at the row end
     * @param warmUpSeconds warm-up rounds go on past {@code warmUp} until this long has passed
     * @param blas          also time numpy's BLAS beside kdapack's product ({@link BlasComparison})
     */
    public record Config(ModelConfig model, int rows, int length, int meanDocLength, int threads, int warmUp,
                         double warmUpSeconds, int repeats, boolean blas) {
        public Config {
            if (rows < 1 || length < 1 || meanDocLength < 1 || threads < 1 || warmUp < 0 || repeats < 1) {
                throw new IllegalArgumentException("rows, length, mean document length, threads and repeats must be "
                        + ">= 1 and warm-up >= 0, got " + rows + ", " + length + ", " + meanDocLength + ", " + threads
                        + ", " + repeats + ", " + warmUp);
            }
            InterleavedTiming.requireWarmUpSeconds(warmUpSeconds);
        }
    }

    private ModelBenchmark() {
    }

    /** Runs the benchmark; the map is the JSON object to print, in a stable key order. */
    public static Map<String, Object> run(Config c) {
        MicroBatch batch = randomBatch(c, new Random(2026));
        LanguageModel.LossWeights weights = new LanguageModel.LossWeights(1.0 / Math.max(batch.lossTokens(), 1),
                0.1 / Math.max(batch.mtpLossTokens(), 1));
        int tokens = batch.size();
        Map<String, Object> out = new LinkedHashMap<>();
        HybridModel probe = new HybridModel(c.model(), new KdaChunked(1), true);
        out.put("parameters", probe.parameters().stream().mapToLong(p -> p.size()).sum());
        out.put("rows", c.rows());
        out.put("length", c.length());
        out.put("tokens_per_step", tokens);
        out.put("documents", batch.segmentCount());
        out.put("threads", c.threads());

        double flops = ModelFlops.trainingStep(c.model(), probe.parameters(), BatchLayout.of(batch, true));

        Step one = new Step(c, batch, weights, 1, true);
        Step many = new Step(c, batch, weights, c.threads(), true);
        Step leaky = new Step(c, batch, weights, c.threads(), false);
        try (MatmulProbe matmul = new MatmulProbe(c.threads())) {
            double[] t = InterleavedTiming.medians(c.warmUp(), c.warmUpSeconds(), c.repeats(), many::forward,
                    many::step, one::step, leaky::step, matmul::run);
            out.put("forward_ms", t[0] * 1e3);
            out.put("forward_backward_ms", t[1] * 1e3);
            out.put("tokens_per_s", tokens / t[1]);
            out.put("tokens_per_s_1_thread", tokens / t[2]);
            out.put("thread_speedup", t[2] / t[1]);
            // After the steps, not among them: what the machine's threads allow at best, for thread_speedup's scale.
            out.put("machine_thread_speedup", ThreadScaling.measure(c.threads()));
            out.put("no_isolation_forward_backward_ms", t[3] * 1e3);
            out.put("isolation_cost_ratio", t[1] / t[3]);
            double matmulGflops = matmul.flops() / t[4] * 1e-9;
            out.put("flops_per_step", flops);
            out.put("model_gflops", flops / t[1] * 1e-9);
            out.put("matmul_gflops", matmulGflops);
            out.put("mfu", flops / t[1] * 1e-9 / matmulGflops);
        } finally {
            one.close();
            many.close();
            leaky.close();
        }
        if (c.blas()) {
            out.putAll(BlasComparison.measure(c.threads()));
        }
        return out;
    }

    /** A model with {@code threads} threads everywhere, timed on the batch: forward, or forward and backward. */
    private static final class Step implements AutoCloseable {
        private final HybridModel model;
        private final ForkJoinPool pool;
        private final MicroBatch batch;
        private final LanguageModel.LossWeights weights;

        Step(Config c, MicroBatch batch, LanguageModel.LossWeights weights, int threads, boolean isolation) {
            this.model = new HybridModel(c.model(), new KdaChunked(threads), isolation);
            this.model.initialize(1);
            this.pool = new ForkJoinPool(threads);
            this.batch = batch;
            this.weights = weights;
        }

        void forward() {
            pool.submit(() -> model.run(batch, null)).join();
        }

        void step() {
            pool.submit(() -> {
                model.parameters().forEach(p -> p.zeroGrad());
                return model.run(batch, weights);
            }).join();
        }

        @Override
        public void close() {
            pool.shutdown();
        }
    }

    /** Rows filled with random documents back to back; positions restart, MTP targets rolled within documents. */
    private static MicroBatch randomBatch(Config c, Random random) {
        int size = c.rows() * c.length();
        int vocab = c.model().vocabSize();
        int[] tokens = new int[size];
        int[] labels = new int[size];
        float[] mask = new float[size];
        int[] positions = new int[size];
        int[] segmentIds = new int[size];
        for (int b = 0; b < c.rows(); b++) {
            int id = 0;
            int remaining = 0;
            int position = 0;
            for (int i = 0; i < c.length(); i++) {
                if (remaining == 0) {
                    remaining = 1 + random.nextInt(2 * c.meanDocLength() - 1);
                    id++;
                    position = 0;
                }
                int p = b * c.length() + i;
                tokens[p] = random.nextInt(vocab);
                labels[p] = random.nextInt(vocab);
                mask[p] = 1f;
                positions[p] = position++;
                segmentIds[p] = id;
                remaining--;
            }
        }
        return MicroBatchAssembler.of(c.rows(), c.length(), tokens, labels, mask, positions, segmentIds, 1);
    }
}
