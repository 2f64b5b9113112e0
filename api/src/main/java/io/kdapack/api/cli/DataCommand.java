package io.kdapack.api.cli;

import picocli.CommandLine.Command;

/** {@code kdapack data …}: Megatron indexed datasets and sample dumps. */
@Command(name = "data", mixinStandardHelpOptions = true,
        description = "Build, inspect and sample Megatron .bin/.idx datasets.",
        subcommands = {})
final class DataCommand {
}
