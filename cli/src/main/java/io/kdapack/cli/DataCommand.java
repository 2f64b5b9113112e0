package io.kdapack.cli;

import io.kdapack.cli.data.DataBuildCommand;
import io.kdapack.cli.data.DataSamplesCommand;
import io.kdapack.cli.data.DataStatsCommand;
import io.kdapack.cli.data.DataSynthCommand;
import picocli.CommandLine.Command;

/** {@code kdapack data …}: Megatron indexed datasets and sample dumps. */
@Command(name = "data", mixinStandardHelpOptions = true,
        description = "Build, inspect and sample Megatron .bin/.idx datasets.",
        subcommands = {DataBuildCommand.class, DataSamplesCommand.class, DataStatsCommand.class, DataSynthCommand.class})
final class DataCommand {
}
