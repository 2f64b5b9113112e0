package io.kdapack.cli.data;

import io.kdapack.cli.JsonLine;
import io.kdapack.data.corpus.CorpusBuilder;
import io.kdapack.data.tokenizer.Tokenizer;
import io.kdapack.tokenizers.HuggingFaceTokenizer;
import io.kdapack.tokenizers.Tokenizers;
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
                + "PREFIX.bin/.idx, appending EOD to every document; prints a JSON summary. --tokenizer is 'byte' "
                + "(UTF-8 bytes, EOD 256) or the path of a Hugging Face tokenizer.json (EOD: its end-of-text token, "
                + "or --eod-id).")
public final class DataBuildCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--input", required = true, paramLabel = "FILE", description = "Corpus: .jsonl or .txt.")
    Path input;

    @Option(names = "--tokenizer", defaultValue = "byte", paramLabel = "byte|PATH",
            description = "'byte' or a tokenizer.json (default: ${DEFAULT-VALUE}).")
    String tokenizer;

    @Option(names = "--eod-id", paramLabel = "E", description = "EOD id for a tokenizer.json (default: its "
            + "end-of-text token, e.g. <|endoftext|>).")
    Integer eodId;

    @Option(names = "--out", required = true, paramLabel = "PREFIX", description = "Output prefix: PREFIX.bin, PREFIX.idx.")
    Path out;

    @Override
    public Integer call() throws IOException {
        Tokenizer t = Tokenizers.byName(tokenizer, eodId, "--tokenizer");
        CorpusBuilder.Summary summary;
        try {
            summary = CorpusBuilder.build(input, t, out);
        } finally {
            if (t instanceof HuggingFaceTokenizer native_) {
                native_.close();
            }
        }
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
