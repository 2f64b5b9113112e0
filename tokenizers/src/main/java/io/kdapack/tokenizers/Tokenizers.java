package io.kdapack.tokenizers;

import io.kdapack.config.ConfigException;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.data.tokenizer.ByteTokenizer;
import io.kdapack.data.tokenizer.Tokenizer;
import java.nio.file.Path;

/**
 * The one place a tokenizer is chosen: bytes ({@link ByteTokenizer}, the default) or a Hugging Face
 * {@code tokenizer.json} ({@link HuggingFaceTokenizer}). {@code kdapack data build --tokenizer}, {@code kdapack generate}
 * and {@code /v1/completions} all go through here, so text becomes the same ids everywhere.
 */
public final class Tokenizers {
    /** The command-line name of the byte tokenizer. */
    public static final String BYTE = "byte";

    private Tokenizers() {
    }

    /**
     * The tokenizer of a model: {@code model.tokenizer} null → bytes; a path → that {@code tokenizer.json}, whose
     * vocabulary must fit {@code model.vocab_size} and which must have an end-of-text token.
     *
     * @throws ConfigException naming {@code model.tokenizer} when the file is missing or malformed, has no end-of-text
     *                         token, or has more ids than {@code model.vocab_size}
     */
    public static Tokenizer forModel(ModelConfig model) {
        if (model.tokenizer() == null) {
            return new ByteTokenizer();
        }
        HuggingFaceTokenizer tokenizer;
        try {
            tokenizer = HuggingFaceTokenizer.open(Path.of(model.tokenizer()), null, "model.tokenizer");
        } catch (IllegalArgumentException e) {
            throw new ConfigException("model.tokenizer", model.tokenizer(), e.getMessage(), null);
        }
        if (tokenizer.vocabSize() > model.vocabSize()) {
            int size = tokenizer.vocabSize();
            tokenizer.close();
            throw new ConfigException("model.tokenizer", model.tokenizer(), "its vocabulary has " + size
                    + " ids, more than model.vocab_size (" + model.vocabSize() + "): raise model.vocab_size to at least "
                    + size, null);
        }
        return tokenizer;
    }

    /**
     * A tokenizer named on the command line: {@value #BYTE}, or the path of a {@code tokenizer.json}.
     *
     * @param eodId  the EOD id to use with a tokenizer.json, or null for its end-of-text token; must be null (or the
     *               byte tokenizer's {@value ByteTokenizer#EOD}) for bytes
     * @param option the option the name came from, named in errors
     * @throws IllegalArgumentException naming {@code option} for a missing or malformed file
     */
    public static Tokenizer byName(String nameOrPath, Integer eodId, String option) {
        if (nameOrPath.equals(BYTE)) {
            if (eodId != null && eodId != ByteTokenizer.EOD) {
                throw new IllegalArgumentException("--eod-id " + eodId + ": the byte tokenizer's EOD is "
                        + ByteTokenizer.EOD);
            }
            return new ByteTokenizer();
        }
        return HuggingFaceTokenizer.open(Path.of(nameOrPath), eodId, option);
    }
}
