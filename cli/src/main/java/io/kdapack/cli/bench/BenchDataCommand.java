package io.kdapack.cli.bench;

import io.kdapack.bench.AssemblyBenchmark;
import io.kdapack.cli.JsonLine;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kdapack bench data}: sample assembly throughput on one thread, as JSON. */
@Command(name = "data", mixinStandardHelpOptions = true,
        description = "Measure sample assembly (index walk, mmap read, tokens/labels/loss mask/positions/segment ids) "
                + "on one thread with every masking flag on; prints samples_per_s and tokens_per_s as JSON.")
public final class BenchDataCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--prefix", required = true, paramLabel = "P", description = "Dataset prefix (P.bin, P.idx).")
    Path prefix;

    @Option(names = "--seq-length", required = true, paramLabel = "L", description = "Tokens per sample.")
    int seqLength;

    @Option(names = "--eod-id", defaultValue = "256", description = "EOD id (default: ${DEFAULT-VALUE}, the byte tokenizer's).")
    int eodId;

    @Option(names = "--split", defaultValue = "100,0,0", description = "Split weights (default: ${DEFAULT-VALUE}).")
    String split;

    @Option(names = "--seconds", defaultValue = "3", description = "Measured interval (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Override
    public Integer call() throws IOException {
        if (!(seconds > 0)) {
            throw new IllegalArgumentException("--seconds must be positive, got " + seconds);
        }
        IndexedDataset dataset = IndexedDataset.open(prefix);
        GptIndexConfig config = new GptIndexConfig(seqLength, 1234, split, DatasetSplit.TRAIN, null, true, true);
        SampleOptions options = new SampleOptions(eodId, -1, true, true, true, false);
        spec.commandLine().getOut().println(JsonLine.of(AssemblyBenchmark.run(dataset, config, options, seconds)));
        return 0;
    }
}
