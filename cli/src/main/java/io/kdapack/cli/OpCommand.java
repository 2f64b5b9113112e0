package io.kdapack.cli;

import io.kdapack.cli.kda.KdaOpCommand;
import picocli.CommandLine.Command;

/** {@code kdapack op …}: run one op on the tensors of a golden-format file. */
@Command(name = "op", mixinStandardHelpOptions = true,
        description = "Run an op on a golden-format safetensors file and write outputs and gradients.",
        subcommands = {ConvOpCommand.class, LossOpCommand.class, KdaOpCommand.class})
final class OpCommand {
}
