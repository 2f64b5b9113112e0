package io.kdapack.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.bench.GenerateBenchmark;
import io.kdapack.bench.server.CompletionsLoad;
import io.kdapack.config.ConfigLoader;
import io.kdapack.core.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench generate}: inference throughput ({@link GenerateBenchmark}) of the default model and of a
 * larger configuration ({@link GenerateBenchmark#larger}), and time to first token through the server
 * ({@link CompletionsLoad}), as one JSON object on stdout.
 */
@Command(name = "generate", mixinStandardHelpOptions = true,
        description = "Benchmark inference: packed against one-at-a-time prefill, batched decode, state bytes, the "
                + "memory-bandwidth bound, and time to first token through the server; prints one JSON object.")
final class GenerateBenchCommand implements Callable<Integer> {

    @Option(names = "--config", paramLabel = "C",
            description = "configuration YAML whose model replaces the default model (default: the built-in one)")
    Path config;

    @Option(names = "--no-larger", description = "skip the larger configuration")
    boolean noLarger;

    @Option(names = "--prompts", defaultValue = "64", description = "prefill prompts (default ${DEFAULT-VALUE})")
    int prompts;

    @Option(names = "--mean-prompt", defaultValue = "128",
            description = "mean prompt length; lengths uniform in [1, 2·mean − 1] (default ${DEFAULT-VALUE})")
    int meanPrompt;

    @Option(names = "--steps", defaultValue = "32", description = "decode steps per run (default ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--decode-batches", split = ",", defaultValue = "1,8,64",
            description = "concurrent sequences of the decode runs (default ${DEFAULT-VALUE})")
    int[] decodeBatches;

    @Option(names = "--threads", description = "worker threads (default: all processors)")
    Integer threads;

    @Option(names = "--warmup", defaultValue = "1", description = "warm-up runs (default ${DEFAULT-VALUE})")
    int warmUp;

    @Option(names = "--repeats", defaultValue = "3", description = "timed runs; medians (default ${DEFAULT-VALUE})")
    int repeats;

    @Option(names = "--clients", defaultValue = "16", description = "server clients (default ${DEFAULT-VALUE}; 0 skips)")
    int clients;

    @Option(names = "--rounds", defaultValue = "4", description = "requests per client (default ${DEFAULT-VALUE})")
    int rounds;

    @Override
    public Integer call() throws Exception {
        int workers = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
        if (workers < 1) {
            throw new IllegalArgumentException("--threads must be >= 1, got " + workers);
        }
        ModelConfig model = config == null ? ModelConfig.defaults() : ConfigLoader.load(config).model();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("threads", workers);
        ForkJoinPool pool = new ForkJoinPool(workers);
        try {
            out.put("default_model", pool.submit(() -> GenerateBenchmark.run(new GenerateBenchmark.Config(model,
                    prompts, meanPrompt, steps, decodeBatches, workers, warmUp, repeats, 1))).get());
            if (!noLarger) {
                out.put("larger_model", pool.submit(() -> GenerateBenchmark.run(new GenerateBenchmark.Config(
                        GenerateBenchmark.larger(), prompts, meanPrompt, steps, decodeBatches, workers, warmUp, repeats, 1)))
                        .get());
            }
        } finally {
            pool.shutdown();
        }
        if (clients > 0) {
            Path dir = Files.createTempDirectory("kdapack-bench-generate");
            try {
                out.put("server", CompletionsLoad.run(dir, model, clients, rounds, 64, 16, workers));
            } finally {
                try (var files = Files.walk(dir)) {
                    for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                        Files.deleteIfExists(p);
                    }
                }
            }
        }
        System.out.println(new ObjectMapper().writeValueAsString(out));
        return 0;
    }
}
