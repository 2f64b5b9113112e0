package io.kdapack.cli.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.cli.Main;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code kdapack data build --tokenizer PATH/tokenizer.json}: a byte-level BPE written here whose merges give
 * {@code hello} = 11, {@code " world"} = 16 and {@code low} = 2 3 5, EOD its {@code <|endoftext|>} (17) or
 * {@code --eod-id}; a missing tokenizer file ends in one line naming {@code --tokenizer}.
 */
class DataBuildTokenizerTest {
    private static final String BPE_JSON = """
            {"version": "1.0", "truncation": null, "padding": null,
             "added_tokens": [{"id": 17, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
                               "rstrip": false, "normalized": false, "special": true}],
             "normalizer": null,
             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
             "post_processor": null,
             "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
             "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                       "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                       "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "w": 5, "r": 6, "d": 7, "ll": 8, "he": 9,
                                 "hell": 10, "hello": 11, "Ġw": 12, "or": 13, "Ġwor": 14, "Ġworl": 15, "Ġworld": 16},
                       "merges": ["l l", "h e", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "Ġwor l", "Ġworl d"]}}
            """;

    @TempDir
    Path dir;

    @Test
    void buildsTheIdsTheTokenizerGives() throws IOException {
        Path tokenizer = Files.writeString(dir.resolve("tokenizer.json"), BPE_JSON);
        Path input = Files.writeString(dir.resolve("docs.txt"), "hello world\nlow\n");
        Path prefix = dir.resolve("out/docs");
        Result r = run("data", "build", "--input", input.toString(), "--tokenizer", tokenizer.toString(), "--out",
                prefix.toString());
        assertEquals(0, r.code, r.err);
        JsonNode summary = new ObjectMapper().readTree(r.out);
        assertEquals(18, summary.path("vocab_size").asInt());
        assertEquals(17, summary.path("eod_id").asInt());
        assertEquals(-1, summary.path("pad_id").asInt());
        assertDocuments(prefix, new int[] {11, 16, 17}, new int[] {2, 3, 5, 17});

        Path withEod = dir.resolve("out/eod3");
        assertEquals(0, run("data", "build", "--input", input.toString(), "--tokenizer", tokenizer.toString(),
                "--eod-id", "3", "--out", withEod.toString()).code);
        assertDocuments(withEod, new int[] {11, 16, 3}, new int[] {2, 3, 5, 3});
    }

    @Test
    void aMissingTokenizerFileIsOneLineNamingTheOption() throws IOException {
        Path input = Files.writeString(dir.resolve("docs.txt"), "hello\n");
        Path absent = dir.resolve("absent/tokenizer.json");
        Result r = run("data", "build", "--input", input.toString(), "--tokenizer", absent.toString(), "--out",
                dir.resolve("x").toString());
        assertEquals(Main.EXIT_BAD_INPUT, r.code);
        assertEquals("kdapack build: --tokenizer " + absent + ": no such file", r.err.strip());
    }

    private static void assertDocuments(Path prefix, int[]... expected) throws IOException {
        IndexedDataset dataset = IndexedDataset.open(prefix);
        assertEquals(expected.length, dataset.sequenceCount());
        for (int d = 0; d < expected.length; d++) {
            int[] read = new int[dataset.sequenceLength(d)];
            dataset.readTokens(d, 0, read.length, read, 0);
            assertArrayEquals(expected[d], read, "document " + d);
        }
        assertTrue(Files.isRegularFile(prefix.resolveSibling(prefix.getFileName() + ".bin")));
    }

    private record Result(int code, String out, String err) {
    }

    private static Result run(String... args) {
        CommandLine cli = Main.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int code = cli.execute(args);
        return new Result(code, out.toString(), err.toString());
    }
}
