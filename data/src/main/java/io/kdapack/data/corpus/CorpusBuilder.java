package io.kdapack.data.corpus;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import io.kdapack.data.tokenizer.Tokenizer;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Tokenizes a text corpus into a Megatron indexed dataset, as {@code tools/preprocess_data.py --append-eod} does: one
 * sequence per document, the EOD id appended to each, uint16 tokens for vocabularies below 65500 ids, else int32.
 *
 * <p>Inputs: {@code .jsonl} (one JSON object per line, the document in its {@code text} field) or {@code .txt} (one
 * document per line). Blank lines are skipped.
 */
public final class CorpusBuilder {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What was written. */
    public record Summary(long documents, long tokens, TokenDType dtype) {
    }

    private CorpusBuilder() {
    }

    /** Tokenizes {@code input} into {@code PREFIX.bin/.idx}; the files appear only when complete. */
    public static Summary build(Path input, Tokenizer tokenizer, Path prefix) throws IOException {
        String name = input.getFileName().toString();
        boolean jsonl = name.endsWith(".jsonl");
        if (!jsonl && !name.endsWith(".txt")) {
            throw new IllegalArgumentException("input " + input + ": expected a .jsonl or .txt file");
        }
        TokenDType dtype = TokenDType.forVocabulary(tokenizer.vocabSize());
        long documents = 0;
        long tokens = 0;
        try (BufferedReader reader = Files.newBufferedReader(input, StandardCharsets.UTF_8);
             IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, dtype)) {
            String line;
            long lineNumber = 0;
            while ((line = reader.readLine()) != null) {
                lineNumber++;
                if (line.isBlank()) {
                    continue;
                }
                String text = jsonl ? text(input, lineNumber, line) : line;
                int[] ids = tokenizer.encode(text);
                int[] document = Arrays.copyOf(ids, ids.length + 1);
                document[ids.length] = tokenizer.eodId();
                builder.addDocument(document);
                documents++;
                tokens += document.length;
            }
            builder.finish();
        }
        return new Summary(documents, tokens, dtype);
    }

    private static String text(Path input, long lineNumber, String line) {
        JsonNode node;
        try {
            node = JSON.readTree(line);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(input + ": line " + lineNumber + ": malformed JSON: " + e.getOriginalMessage());
        }
        JsonNode text = node == null ? null : node.get("text");
        if (text == null || !text.isTextual()) {
            throw new IllegalArgumentException(input + ": line " + lineNumber + ": expected an object with a string field "
                    + "'text', found " + (line.length() > 80 ? line.substring(0, 80) + "…" : line));
        }
        return text.asText();
    }
}
