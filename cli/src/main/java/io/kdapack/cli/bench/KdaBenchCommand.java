package io.kdapack.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.bench.KdaBenchmark;
import io.kdapack.cli.ThreadsOption;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench kda}: throughput of the chunked CPU KDA (forward, forward+backward), the cost of
 * packing, the speed-up over the recurrence and the achieved GFLOP/s against an fp32 matrix product, as one
 * JSON object on stdout.
 */
@Command(name = "kda", mixinStandardHelpOptions = true, description = "Benchmark the CPU KDA op; prints one JSON object.")
public final class KdaBenchCommand implements Callable<Integer> {

    @Option(names = "--T", defaultValue = "4096", description = "Tokens (default ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--H", defaultValue = "4", description = "q/k heads (default ${DEFAULT-VALUE}).")
    int heads;

    @Option(names = "--HV", description = "Value heads (default: H).")
    Integer valueHeads;

    @Option(names = "--K", defaultValue = "64", description = "Key dim (default ${DEFAULT-VALUE}).")
    int keyDim;

    @Option(names = "--V", defaultValue = "64", description = "Value dim (default ${DEFAULT-VALUE}).")
    int valueDim;

    @Option(names = "--docs", defaultValue = "64", description = "Random-length documents in the packed batch (default ${DEFAULT-VALUE}).")
    int docs;

    @Option(names = "--states", description = "Per-document initial and final states and their gradients (the "
            + "prefill case); default: the training case, without them.")
    boolean states;

    @Option(names = "--layer-options", description = "Call the op as the default model's KDA layers do (in-op l2 norm, "
            + "lower-bound gate, beta sigmoid), timing the preprocessing too; default: the plain op.")
    boolean layerOptions;

    @Option(names = "--lower-bound", description = "With --layer-options: the lower-bound gate's bound in [-5, 0) "
            + "(default: the default model's, -0.01). At -5 the gates decay strongly: most of a chunk's decays leave "
            + "the float range.")
    Float lowerBound;

    @Mixin
    ThreadsOption threads;

    @Mixin
    TimingOptions timing;

    @Override
    public Integer call() throws Exception {
        KdaBenchmark.Config config = new KdaBenchmark.Config(tokens, heads, valueHeads == null ? heads : valueHeads,
                keyDim, valueDim, docs, states, layerOptions, lowerBound, threads.count(),
                timing.warmUp(12), timing.repeats(12));
        System.out.println(new ObjectMapper().writeValueAsString(KdaBenchmark.run(config)));
        return 0;
    }
}
