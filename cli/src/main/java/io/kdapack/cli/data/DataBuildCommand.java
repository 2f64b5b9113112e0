package io.kdapack.cli.data;

import io.kdapack.cli.JsonLine;
import io.kdapack.data.corpus.CorpusBuilder;
import io.kdapack.data.tokenizer.Tokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kdapack data build}: tokenize a .jsonl or .txt corpus into a Megatron .bin/.idx dataset. */
@Command(name = "build", mixinStandardHelpOptions = true,
        description = "Tokenize FILE (.jsonl with a 'text' field per line, or .txt with one document per line) into "
                + "PREFIX.bin/.idx, appending EOD to every document; prints a JSON summary.")
public final class DataBuildCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--input", required = true, paramLabel = "FILE", description = "Corpus: .jsonl or .txt.")
    Path input;

    @Option(names = "--tokenizer", defaultValue = "byte", description = "Tokenizer name (default: ${DEFAULT-VALUE}).")
    String tokenizer;

    @Option(names = "--out", required = true, paramLabel = "PREFIX", description = "Output prefix: PREFIX.bin, PREFIX.idx.")
    Path out;

    @Override
    public Integer call() throws IOException {
        Tokenizer t = Tokenizer.byName(tokenizer);
        CorpusBuilder.Summary summary = CorpusBuilder.build(input, t, out);
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("prefix", out.toString());
        json.put("documents", summary.documents());
        json.put("tokens", summary.tokens());
        json.put("dtype", summary.dtype().name().toLowerCase(java.util.Locale.ROOT));
        json.put("tokenizer", tokenizer);
        json.put("vocab_size", t.vocabSize());
        json.put("eod_id", t.eodId());
        json.put("pad_id", t.padId());
        spec.commandLine().getOut().println(JsonLine.of(json));
        return 0;
    }
}
