package io.kdapack.api.cli;

import picocli.CommandLine.Command;

/** {@code kdapack bench …}: throughput figures as one JSON object. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure throughput; prints one JSON object.",
        subcommands = {io.kdapack.api.kda.KdaBenchCommand.class})
final class BenchCommand {
}
