package io.kdapack.cli.bench;

import io.kdapack.cli.bench.BenchDataCommand;
import io.kdapack.cli.bench.KdaBenchCommand;
import picocli.CommandLine.Command;

/** {@code kdapack bench …}: throughput figures as one JSON object. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure throughput; prints one JSON object.",
        subcommands = {KdaBenchCommand.class, BenchDataCommand.class, ModelBenchCommand.class, GenerateBenchCommand.class,
                ServerBenchCommand.class, SseBenchCommand.class, ClusterBenchCommand.class})
public final class BenchCommand {
}
