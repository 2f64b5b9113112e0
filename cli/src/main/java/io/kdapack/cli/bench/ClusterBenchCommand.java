package io.kdapack.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.bench.cluster.ClusterBenchmark;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.training.DatasetPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench cluster}: step time of a data-parallel run on two worker JVMs against one, split into compute,
 * waiting and gradient exchange, with the bytes per step ({@link ClusterBenchmark}).
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = {"Two worker JVMs on loopback (train.data_parallel 2, one block each) against one worker JVM "
                + "running both blocks; JSON.",
                "Rounds of (one worker, two workers); step time = median interval between step reports after "
                        + "--warmup steps; per rank: compute, wait, exchange (medians), bytes sent/received per step. "
                        + "Every run's losses must be the same bits."})
final class ClusterBenchCommand implements Callable<Integer> {

    @Option(names = "--config", paramLabel = "FILE", description = "YAML configuration (default: the demo).")
    Path config;

    @Option(names = "--steps", defaultValue = "40", description = "Optimizer steps per run (default ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--warmup", defaultValue = "20", description = "First steps left out (default ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--rounds", defaultValue = "2", description = "Rounds of the two runs (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--threads", defaultValue = "1", description = "Compute threads per worker (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--chunk-bytes", defaultValue = "1048576",
            description = "kdapack.parallel.chunk-bytes of the workers (default ${DEFAULT-VALUE}).")
    long chunkBytes;

    @Override
    public Integer call() throws Exception {
        if (warmup < 1 || steps <= warmup + 1 || rounds < 1 || threads < 1 || chunkBytes < 4 || chunkBytes % 4 != 0) {
            throw new IllegalArgumentException("need --warmup >= 1, --steps > --warmup + 1, --rounds >= 1, --threads >= 1 "
                    + "and --chunk-bytes a positive multiple of 4, got " + warmup + ", " + steps + ", " + rounds + ", "
                    + threads + " and " + chunkBytes);
        }
        KdapackConfig base = ConfigLoader.load(config);
        Map<String, Object> document = new LinkedHashMap<>(base.toMap());
        @SuppressWarnings("unchecked")
        Map<String, Object> train = new LinkedHashMap<>((Map<String, Object>) document.get("train"));
        train.put("steps", steps);
        train.put("threads", threads);
        train.put("data_parallel", 2);
        train.put("eval_interval", 0);
        train.put("checkpoint", Map.of("interval", 0));
        @SuppressWarnings("unchecked")
        Map<String, Object> optimizer = new LinkedHashMap<>((Map<String, Object>) train.get("optimizer"));
        // Timing does not depend on the learning rate; the schedule only needs warmup < steps.
        optimizer.put("warmup_steps", Math.min(((Number) optimizer.get("warmup_steps")).intValue(), 1));
        train.put("optimizer", optimizer);
        @SuppressWarnings("unchecked")
        Map<String, Object> data = new LinkedHashMap<>((Map<String, Object>) train.get("data"));
        if (data.get("blend") == null) {
            data.put("prefix", DatasetPaths.trainPrefix((String) data.get("prefix")).toString());
        }
        train.put("data", data);
        document.put("train", train);
        document.remove("server");
        KdapackConfig run = ConfigLoader.fromDocument(document);
        Path file = Files.createTempFile("kdapack-bench-cluster", ".yaml");
        try {
            Files.writeString(file, new ObjectMapper().writeValueAsString(document));
            List<String> javaOptions = new ArrayList<>(List.of("--add-modules", "jdk.incubator.vector",
                    "-Dkdapack.parallel.chunk-bytes=" + chunkBytes, "-Xmx1g"));
            String home = System.getProperty(DatasetPaths.HOME_PROPERTY);
            if (home != null) {
                javaOptions.add("-D" + DatasetPaths.HOME_PROPERTY + "=" + home);
            }
            Map<String, Object> result = ClusterBenchmark.run(new ClusterBenchmark.Settings(run, file, warmup, rounds,
                    javaOptions));
            result.put("chunk_bytes", chunkBytes);
            System.out.println(new ObjectMapper().writeValueAsString(result));
        } finally {
            Files.deleteIfExists(file);
        }
        return 0;
    }
}
