package io.kdapack.tokenizers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.data.tokenizer.Tokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A Hugging Face {@code tokenizer.json} behind data's {@link Tokenizer}: encoding and decoding run in the Rust
 * {@code tokenizers} library itself (through DJL's JNI bindings), so the ids are exactly those Hugging Face gives.
 * Text is encoded without the tokenizer's own special tokens (no BOS/EOS from its post-processor: the data pipeline
 * appends EOD itself), without truncation or padding; decoding skips special tokens.
 *
 * <p>The vocabulary size is read from the file: one more than the largest id of {@code model.vocab} and
 * {@code added_tokens} (for a Unigram model, the length of its vocabulary list). The end-of-document id is the first
 * of {@link #END_OF_TEXT} that the file has as an added token, unless given; the pad id the first of {@link #PAD},
 * else −1.
 *
 * <p>Thread safe (the native tokenizer is immutable). Holds native memory until {@link #close()}.
 */
public final class HuggingFaceTokenizer implements Tokenizer, AutoCloseable {
    /** End-of-text tokens recognised as EOD, in this order (GPT-2/Qwen, Llama 3, Llama 2/Mistral/T5, Gemma). */
    public static final List<String> END_OF_TEXT = List.of("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>");
    /** Pad tokens recognised, in this order. */
    public static final List<String> PAD = List.of("<pad>", "<|pad|>", "[PAD]", "<|padding|>");
    /** Largest tokenizer.json read (real ones are up to a few tens of MiB). */
    public static final long MAX_FILE_BYTES = 256L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ai.djl.huggingface.tokenizers.HuggingFaceTokenizer tokenizer;
    private final Path file;
    private final int vocabSize;
    private final int eodId;
    private final int padId;

    private HuggingFaceTokenizer(ai.djl.huggingface.tokenizers.HuggingFaceTokenizer tokenizer, Path file, int vocabSize,
                                 int eodId, int padId) {
        this.tokenizer = tokenizer;
        this.file = file;
        this.vocabSize = vocabSize;
        this.eodId = eodId;
        this.padId = padId;
    }

    /**
     * Loads {@code file}.
     *
     * @param eodId the EOD id to use, or null for the file's end-of-text token
     * @param key   the option or configuration key the path came from, named in every error
     * @throws IllegalArgumentException naming {@code key} when the file is missing, too large, not JSON, not a tokenizer
     *                                  the library accepts, has no end-of-text token (and {@code eodId} is null), or
     *                                  {@code eodId} lies outside its vocabulary
     */
    public static HuggingFaceTokenizer open(Path file, Integer eodId, String key) {
        JsonNode document = read(file, key);
        int vocabSize = vocabularySize(document, file, key);
        Map<String, Integer> added = new java.util.HashMap<>();
        for (JsonNode token : document.path("added_tokens")) {
            added.put(token.path("content").asText(), token.path("id").asInt());
        }
        int eod;
        if (eodId != null) {
            if (eodId < 0 || eodId >= vocabSize) {
                throw new IllegalArgumentException(key + " " + file + ": EOD id " + eodId + " outside its vocabulary [0, "
                        + vocabSize + ")");
            }
            eod = eodId;
        } else {
            eod = END_OF_TEXT.stream().filter(added::containsKey).findFirst().map(added::get)
                    .orElseThrow(() -> new IllegalArgumentException(key + " " + file + ": no end-of-text token among its "
                            + "added tokens (looked for " + String.join(" ", END_OF_TEXT) + "); give the EOD id"
                            + " (kdapack data build --eod-id)"));
        }
        int pad = PAD.stream().filter(added::containsKey).findFirst().map(added::get).orElse(-1);
        if (pad == eod) {
            pad = -1;
        }
        ai.djl.huggingface.tokenizers.HuggingFaceTokenizer native_;
        try {
            native_ = ai.djl.huggingface.tokenizers.HuggingFaceTokenizer.builder().optTokenizerPath(file)
                    .optAddSpecialTokens(false).optTruncation(false).optPadding(false)
                    .optWithOverflowingTokens(false).build();
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException(key + " " + file + ": not a tokenizer the Hugging Face library accepts: "
                    + firstLine(e), e);
        }
        return new HuggingFaceTokenizer(native_, file, vocabSize, eod, pad);
    }

    /** The file this tokenizer was read from. */
    public Path file() {
        return file;
    }

    @Override
    public int[] encode(String text) {
        long[] ids = tokenizer.encode(text, false, false).getIds();
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Math.toIntExact(ids[i]);
        }
        return out;
    }

    /** @throws IllegalArgumentException when an id lies outside the vocabulary */
    @Override
    public String decode(int[] ids, int offset, int length) {
        long[] wide = new long[length];
        for (int i = 0; i < length; i++) {
            int id = ids[offset + i];
            if (id < 0 || id >= vocabSize) {
                throw new IllegalArgumentException("token id " + id + " at index " + (offset + i) + " outside the "
                        + "vocabulary [0, " + vocabSize + ") of " + file);
            }
            wide[i] = id;
        }
        return tokenizer.decode(wide, true);
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public int eodId() {
        return eodId;
    }

    @Override
    public int padId() {
        return padId;
    }

    /** Frees the native tokenizer. */
    @Override
    public void close() {
        tokenizer.close();
    }

    private static JsonNode read(Path file, String key) {
        try {
            long size = Files.size(file);
            if (size > MAX_FILE_BYTES) {
                throw new IllegalArgumentException(key + " " + file + ": " + size + " bytes, more than the "
                        + MAX_FILE_BYTES + " a tokenizer.json may have");
            }
            JsonNode document = JSON.readTree(file.toFile());
            if (document == null || !document.isObject() || !document.path("model").isObject()) {
                throw new IllegalArgumentException(key + " " + file + ": malformed tokenizer.json: expected a JSON object "
                        + "with a 'model' section");
            }
            return document;
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(key + " " + file + ": no such file");
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException(key + " " + file + ": malformed tokenizer.json: " + e.getOriginalMessage()
                    + " (line " + e.getLocation().getLineNr() + ")");
        } catch (IOException e) {
            throw new IllegalArgumentException(key + " " + file + ": cannot read: " + e.getMessage(), e);
        }
    }

    private static int vocabularySize(JsonNode document, Path file, String key) {
        JsonNode vocab = document.path("model").path("vocab");
        long largest = -1;
        if (vocab.isObject()) {
            for (Iterator<JsonNode> ids = vocab.elements(); ids.hasNext(); ) {
                largest = Math.max(largest, ids.next().asLong(-1));
            }
        } else if (vocab.isArray()) {
            largest = vocab.size() - 1L; // Unigram: [[piece, score], …], ids by position
        } else {
            throw new IllegalArgumentException(key + " " + file + ": malformed tokenizer.json: 'model.vocab' is neither "
                    + "a mapping of tokens to ids nor a list");
        }
        for (JsonNode token : document.path("added_tokens")) {
            largest = Math.max(largest, token.path("id").asLong(-1));
        }
        if (largest < 0 || largest >= Integer.MAX_VALUE) {
            throw new IllegalArgumentException(key + " " + file + ": malformed tokenizer.json: "
                    + (largest < 0 ? "an empty vocabulary" : "id " + largest + " does not fit an int"));
        }
        return (int) largest + 1;
    }

    private static String firstLine(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return message.lines().findFirst().orElse(message);
    }
}
