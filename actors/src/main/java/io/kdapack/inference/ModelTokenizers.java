package io.kdapack.inference;

import io.kdapack.config.KdapackConfig;
import io.kdapack.data.tokenizer.ByteTokenizer;
import io.kdapack.data.tokenizer.Tokenizer;

/**
 * The one place inference obtains a model's tokenizer (text prompts in, generated text out). Today every model reads
 * and writes text through the {@link ByteTokenizer}; token ids are checked against the model's own vocabulary
 * separately, so a model whose vocabulary is smaller than the tokenizer's (the demo's 131 ids) refuses text whose
 * bytes it has no ids for, and generated ids the tokenizer does not know are left out of the text.
 */
public final class ModelTokenizers {
    private ModelTokenizers() {
    }

    /** The tokenizer of a model trained with {@code config}. */
    public static Tokenizer forModel(KdapackConfig config) {
        return new ByteTokenizer();
    }
}
