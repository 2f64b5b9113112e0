package io.kdapack.cli.bench;

import picocli.CommandLine.Option;

/** {@code --warmup} and {@code --repeats} of the benchmarks that report a median of timed runs. */
final class TimingOptions {

    @Option(names = "--warmup", description = "Warm-up runs per measurement (default: 12 for bench kda, whose calls "
            + "take tens of milliseconds: after 3, its times still ran up to 1.5x high while the JIT compiled; for "
            + "bench model 3, and more until 10 s have passed).")
    Integer warmUp;

    @Option(names = "--repeats", description = "Timed runs per measurement; the median is reported (default: 12 for "
            + "bench kda, two cycles of its six actions' carry-over balanced order; 5 for bench model).")
    Integer repeats;

    /** The warm-up runs asked for, or the benchmark's own default. */
    int warmUp(int defaultWarmUp) {
        return warmUp == null ? defaultWarmUp : warmUp;
    }

    /**
     * The seconds of warm-up a benchmark adds to its default count: {@code defaultSeconds} when {@code --warmup} was
     * not given, none when it was (the count asked for is then exactly what runs).
     */
    double warmUpSeconds(double defaultSeconds) {
        return warmUp == null ? defaultSeconds : 0;
    }

    /** The timed runs asked for, or the benchmark's own default. */
    int repeats(int defaultRepeats) {
        return repeats == null ? defaultRepeats : repeats;
    }
}
