package io.kdapack.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.bench.ModelBenchmark;
import io.kdapack.cli.ThreadsOption;
import io.kdapack.config.ConfigLoader;
import io.kdapack.core.model.ModelConfig;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench model}: training-step throughput of the hybrid model, its useful GFLOP/s and their fraction of
 * the machine's matrix-product rate ({@code mfu}), and numpy's BLAS for scale, as one JSON object on stdout.
 */
@Command(name = "model", mixinStandardHelpOptions = true,
        description = "Benchmark a training step (forward, backward) of the hybrid model; prints one JSON object.")
final class ModelBenchCommand implements Callable<Integer> {

    @Option(names = "--config", paramLabel = "C", description = "configuration YAML (default: the built-in tiny model)")
    Path config;

    @Option(names = "--rows", defaultValue = "8", description = "Rows B (default ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--length", defaultValue = "256", description = "Tokens per row L (default ${DEFAULT-VALUE}).")
    int length;

    @Option(names = "--mean-doc", defaultValue = "64", description = "Mean document length (default ${DEFAULT-VALUE}).")
    int meanDoc;

    @Option(names = "--no-blas", description = "Skip timing numpy's BLAS beside kdapack's matrix product.")
    boolean noBlas;

    @Mixin
    ThreadsOption threads;

    @Mixin
    TimingOptions timing;

    @Override
    public Integer call() throws Exception {
        ModelConfig model = config == null ? ModelConfig.defaults() : ConfigLoader.loadModel(config);
        ModelBenchmark.Config c = new ModelBenchmark.Config(model, rows, length, meanDoc,
                threads.count(), timing.warmUp(3), timing.warmUpSeconds(10), timing.repeats(5), !noBlas);
        System.out.println(new ObjectMapper().writeValueAsString(ModelBenchmark.run(c)));
        return 0;
    }
}
