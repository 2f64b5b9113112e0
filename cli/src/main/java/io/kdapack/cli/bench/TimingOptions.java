package io.kdapack.cli.bench;

import picocli.CommandLine.Option;

/** {@code --warmup} and {@code --repeats} of the benchmarks that report a median of timed runs. */
final class TimingOptions {

    @Option(names = "--warmup", defaultValue = "3", description = "Warm-up runs per measurement (default ${DEFAULT-VALUE}).")
    int warmUp;

    @Option(names = "--repeats", description = "Timed runs per measurement; the median is reported (default: 7 for "
            + "bench kda, 5 for bench model).")
    Integer repeats;

    /** The timed runs asked for, or the benchmark's own default. */
    int repeats(int defaultRepeats) {
        return repeats == null ? defaultRepeats : repeats;
    }
}
