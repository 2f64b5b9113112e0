package io.kdapack.cli.data;

import io.kdapack.cli.JsonLine;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.training.RecallDatasets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kdapack data synth}: the demo task's documents as a Megatron dataset. */
@Command(name = "synth", mixinStandardHelpOptions = true,
        description = "Write N multi-query associative-recall documents (64 keys, 64 values, by default 1-2 bindings "
                + "each; every document asks for its own keys and, answered NONE, for the keys of the document before "
                + "it that it did not bind; ids: keys 0-63, values 64-127, QUERY 128, EOD 129, PAD 130, NONE 131) to "
                + "PREFIX.bin/.idx, one document per sequence, deterministic in the seed; prints a JSON summary.")
public final class DataSynthCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--out", required = true, paramLabel = "PREFIX", description = "Output prefix: PREFIX.bin, PREFIX.idx.")
    Path out;

    @Option(names = "--docs", required = true, paramLabel = "N", description = "Documents to write.")
    int docs;

    @Option(names = "--seed", required = true, paramLabel = "S", description = "Seed of the documents.")
    long seed;

    @Option(names = "--min-pairs", defaultValue = "1", paramLabel = "K",
            description = "Fewest bindings in a document (default: ${DEFAULT-VALUE}).")
    int minPairs;

    @Option(names = "--max-pairs", defaultValue = "2", paramLabel = "K",
            description = "Most bindings in a document, at most 64 (default: ${DEFAULT-VALUE}).")
    int maxPairs;

    @Override
    public Integer call() throws IOException {
        if (docs < 1) {
            throw new IllegalArgumentException("--docs must be >= 1, got " + docs);
        }
        // The vocabulary of AssociativeRecall.demo() (64 keys, 64 values: the same token ids), with the requested
        // document lengths.
        AssociativeRecall task = new AssociativeRecall(64, 64, minPairs, maxPairs);
        RecallDatasets.write(out, task, docs, seed);
        IndexedDataset written = IndexedDataset.open(out);
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("prefix", out.toString());
        json.put("documents", written.sequenceCount());
        json.put("tokens", written.tokenCount());
        json.put("dtype", written.dtype().name().toLowerCase(java.util.Locale.ROOT));
        json.put("vocab_size", task.vocabularySize());
        json.put("eod_id", task.eodId());
        json.put("pad_id", task.padId());
        json.put("query_id", task.queryId());
        json.put("none_id", task.noneId());
        json.put("min_pairs", minPairs);
        json.put("max_pairs", maxPairs);
        spec.commandLine().getOut().println(JsonLine.of(json));
        return 0;
    }
}
