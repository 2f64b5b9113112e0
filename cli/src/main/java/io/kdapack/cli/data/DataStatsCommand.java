package io.kdapack.cli.data;

import io.kdapack.cli.JsonLine;
import io.kdapack.data.corpus.CorpusStats;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kdapack data stats}: document lengths and documents per sample, as JSON. */
@Command(name = "stats", mixinStandardHelpOptions = true,
        description = "Print the document length distribution and documents per sample (min/mean/p50/p90/p99/max) "
                + "of PREFIX.bin/.idx for samples of L tokens, as JSON.")
public final class DataStatsCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--prefix", required = true, paramLabel = "P", description = "Dataset prefix (P.bin, P.idx).")
    Path prefix;

    @Option(names = "--seq-length", required = true, paramLabel = "L", description = "Tokens per sample.")
    int seqLength;

    @Override
    public Integer call() throws IOException {
        spec.commandLine().getOut().println(JsonLine.of(CorpusStats.of(IndexedDataset.open(prefix), seqLength)));
        return 0;
    }
}
