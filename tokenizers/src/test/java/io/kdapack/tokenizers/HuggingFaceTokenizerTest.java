package io.kdapack.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.ConfigException;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.data.corpus.CorpusBuilder;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.TokenDType;
import io.kdapack.data.tokenizer.ByteTokenizer;
import io.kdapack.data.tokenizer.Tokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small byte-level BPE {@code tokenizer.json} written here (GPT-2's layout: ByteLevel pre-tokenizer and decoder, a
 * space becomes {@code Ġ}) with known merges, so the expected ids follow from the merge ranks by hand:
 * {@code hello} is h e l l o → (l l) → (h e) → (he ll) → (hell o) = one token; {@code " world"} is Ġ w o r l d →
 * (Ġ w) → (o r) → (Ġw or) → (Ġwor l) → (Ġworl d) = one token; {@code low} has no merge: l, o, w.
 */
class HuggingFaceTokenizerTest {
    static final int HELLO = 11;
    static final int SPACE_WORLD = 16;
    static final int END_OF_TEXT = 17;

    /** The tokenizer.json: 17 BPE tokens and the special {@code <|endoftext|>} (id 17). */
    static final String BPE_JSON = """
            {
              "version": "1.0",
              "truncation": null,
              "padding": null,
              "added_tokens": [
                {"id": 17, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false,
                 "normalized": false, "special": true}
              ],
              "normalizer": null,
              "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
              "post_processor": null,
              "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
              "model": {
                "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "w": 5, "r": 6, "d": 7, "ll": 8, "he": 9, "hell": 10,
                          "hello": 11, "Ġw": 12, "or": 13, "Ġwor": 14, "Ġworl": 15, "Ġworld": 16},
                "merges": ["l l", "h e", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "Ġwor l", "Ġworl d"]
              }
            }
            """;

    @TempDir
    Path dir;

    static Path write(Path dir) throws IOException {
        return Files.writeString(dir.resolve("tokenizer.json"), BPE_JSON);
    }

    @Test
    void encodesAndDecodesKnownStringsToKnownIds() throws IOException {
        try (HuggingFaceTokenizer t = HuggingFaceTokenizer.open(write(dir), null, "--tokenizer")) {
            assertArrayEquals(new int[] {HELLO, SPACE_WORLD}, t.encode("hello world"));
            assertArrayEquals(new int[] {2, 3, 5}, t.encode("low"));
            assertArrayEquals(new int[] {10, 4, 2, 3, 5}, t.encode("hell low"));
            assertArrayEquals(new int[] {HELLO, END_OF_TEXT, HELLO}, t.encode("hello<|endoftext|>hello"));
            assertEquals("hello world", t.decode(new int[] {HELLO, SPACE_WORLD}, 0, 2));
            assertEquals("hell low", t.decode(new int[] {9, 10, 4, 2, 3, 5}, 1, 5));
            assertEquals("hellohello", t.decode(new int[] {HELLO, END_OF_TEXT, HELLO}, 0, 3), "specials are skipped");
            assertEquals(18, t.vocabSize());
            assertEquals(END_OF_TEXT, t.eodId());
            assertEquals(-1, t.padId());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> t.decode(new int[] {18}, 0, 1));
            assertTrue(e.getMessage().startsWith("token id 18 at index 0 outside the vocabulary [0, 18)"), e.getMessage());
        }
    }

    @Test
    void longTextIsNeitherTruncatedNorPadded() throws IOException {
        try (HuggingFaceTokenizer t = HuggingFaceTokenizer.open(write(dir), null, "--tokenizer")) {
            int[] ids = t.encode("hello world".repeat(1000));
            assertEquals(2000, ids.length);
        }
    }

    @Test
    void dataBuildWithItWritesTheIdsItGives() throws IOException {
        Path input = Files.writeString(dir.resolve("corpus.jsonl"),
                "{\"text\": \"hello world\"}\n{\"text\": \"low\"}\n\n{\"text\": \"hell low hello\"}\n");
        Path prefix = dir.resolve("corpus");
        try (HuggingFaceTokenizer t = HuggingFaceTokenizer.open(write(dir), null, "--tokenizer")) {
            CorpusBuilder.Summary summary = CorpusBuilder.build(input, t, prefix);
            assertEquals(3, summary.documents());
            assertEquals(TokenDType.forVocabulary(18), summary.dtype());
        }
        IndexedDataset dataset = IndexedDataset.open(prefix);
        int[][] expected = {{HELLO, SPACE_WORLD, END_OF_TEXT}, {2, 3, 5, END_OF_TEXT},
                // " hello" is Ġ h e l l o: no merge joins Ġ and h, the rest merges to hello.
                {10, 4, 2, 3, 5, 4, HELLO, END_OF_TEXT}};
        assertEquals(expected.length, dataset.sequenceCount());
        for (int d = 0; d < expected.length; d++) {
            int[] read = new int[dataset.sequenceLength(d)];
            dataset.readTokens(d, 0, read.length, read, 0);
            assertArrayEquals(expected[d], read, "document " + d);
        }
    }

    @Test
    void anExplicitEodIdWinsAndMustFitTheVocabulary() throws IOException {
        Path file = write(dir);
        try (HuggingFaceTokenizer t = HuggingFaceTokenizer.open(file, 3, "--tokenizer")) {
            assertEquals(3, t.eodId());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HuggingFaceTokenizer.open(file, 18, "--tokenizer"));
        assertEquals("--tokenizer " + file + ": EOD id 18 outside its vocabulary [0, 18)", e.getMessage());
        Path noEnd = Files.writeString(dir.resolve("no-eot.json"), BPE_JSON.replace("<|endoftext|>", "<|special|>"));
        e = assertThrows(IllegalArgumentException.class, () -> HuggingFaceTokenizer.open(noEnd, null, "--tokenizer"));
        assertTrue(e.getMessage().contains("no end-of-text token among its added tokens"), e.getMessage());
    }

    @Test
    void missingOrMalformedFilesAreErrorsNamingTheKey() throws IOException {
        Path missing = dir.resolve("absent.json");
        expect("--tokenizer " + missing + ": no such file", missing);
        expect("malformed tokenizer.json: Unexpected end-of-input",
                Files.writeString(dir.resolve("cut.json"), BPE_JSON.substring(0, 200)));
        expect("malformed tokenizer.json: expected a JSON object with a 'model' section",
                Files.writeString(dir.resolve("array.json"), "[1, 2]"));
        expect("not a tokenizer the Hugging Face library accepts",
                Files.writeString(dir.resolve("bad-type.json"), BPE_JSON.replace("\"type\": \"BPE\"", "\"type\": \"Nope\"")));
    }

    @Test
    void forModelChecksTheVocabularyAgainstModelVocabSize() throws IOException {
        Path file = write(dir);
        assertInstanceOf(ByteTokenizer.class, Tokenizers.forModel(KdapackConfig.defaults().model()));
        KdapackConfig fits = ConfigLoader.fromDocument(Map.of("model", Map.of("vocab_size", 18, "tokenizer",
                file.toString()), "train", Map.of("data", Map.of("eod_id", 17, "pad_id", -1))));
        Tokenizer t = Tokenizers.forModel(fits.model());
        assertArrayEquals(new int[] {HELLO, SPACE_WORLD}, t.encode("hello world"));
        ((HuggingFaceTokenizer) t).close();
        KdapackConfig tooSmall = ConfigLoader.fromDocument(Map.of("model", Map.of("vocab_size", 17, "tokenizer",
                file.toString()), "train", Map.of("data", Map.of("eod_id", 16, "pad_id", -1))));
        ConfigException e = assertThrows(ConfigException.class, () -> Tokenizers.forModel(tooSmall.model()));
        assertEquals("model.tokenizer", e.key());
        assertTrue(e.getMessage().endsWith("its vocabulary has 18 ids, more than model.vocab_size (17): raise "
                + "model.vocab_size to at least 18"), e.getMessage());
        KdapackConfig absent = ConfigLoader.fromDocument(Map.of("model", Map.of("tokenizer",
                dir.resolve("none.json").toString())));
        e = assertThrows(ConfigException.class, () -> Tokenizers.forModel(absent.model()));
        assertEquals("model.tokenizer", e.key());
        assertTrue(e.getMessage().endsWith("none.json: no such file"), e.getMessage());
    }

    @Test
    void byNameKeepsTheByteTokenizerAsTheDefault() throws IOException {
        assertInstanceOf(ByteTokenizer.class, Tokenizers.byName("byte", null, "--tokenizer"));
        assertThrows(IllegalArgumentException.class, () -> Tokenizers.byName("byte", 3, "--tokenizer"));
        try (HuggingFaceTokenizer t = (HuggingFaceTokenizer) Tokenizers.byName(write(dir).toString(), null,
                "--tokenizer")) {
            assertEquals(END_OF_TEXT, t.eodId());
        }
    }

    private static void expect(String message, Path file) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HuggingFaceTokenizer.open(file, null, "--tokenizer"));
        assertTrue(e.getMessage().startsWith("--tokenizer " + file + ": ") && e.getMessage().contains(message),
                e.getMessage());
    }
}
