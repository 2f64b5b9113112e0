package io.kdapack.cli;

import picocli.CommandLine.Option;

/** {@code --threads N}: the worker threads of the CPU kernels, shared by the commands that run them. */
public final class ThreadsOption {

    @Option(names = "--threads", paramLabel = "N", description = "Worker threads (default: all processors).")
    Integer threads;

    /** The threads asked for, or every processor; a count below 1 is refused naming the option. */
    public int count() {
        if (threads == null) {
            return Runtime.getRuntime().availableProcessors();
        }
        if (threads < 1) {
            throw new IllegalArgumentException("--threads must be >= 1, got " + threads);
        }
        return threads;
    }
}
