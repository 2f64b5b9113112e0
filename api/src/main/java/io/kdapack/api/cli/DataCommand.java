package io.kdapack.api.cli;

import io.kdapack.api.cli.data.DataBuildCommand;
import io.kdapack.api.cli.data.DataSamplesCommand;
import io.kdapack.api.cli.data.DataStatsCommand;
import picocli.CommandLine.Command;

/** {@code kdapack data …}: Megatron indexed datasets and sample dumps. */
@Command(name = "data", mixinStandardHelpOptions = true,
        description = "Build, inspect and sample Megatron .bin/.idx datasets.",
        subcommands = {DataBuildCommand.class, DataSamplesCommand.class, DataStatsCommand.class})
final class DataCommand {
}
