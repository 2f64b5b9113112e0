package io.kdapack.api.cli;

import io.kdapack.api.cli.data.BenchDataCommand;
import io.kdapack.api.cli.kda.KdaBenchCommand;
import picocli.CommandLine.Command;

/** {@code kdapack bench …}: throughput figures as one JSON object. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure throughput; prints one JSON object.",
        subcommands = {KdaBenchCommand.class, BenchDataCommand.class, ModelBenchCommand.class, GenerateBenchCommand.class,
                ServerBenchCommand.class, SseBenchCommand.class})
final class BenchCommand {
}
