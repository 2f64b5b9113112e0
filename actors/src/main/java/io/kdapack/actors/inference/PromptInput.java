package io.kdapack.actors.inference;

/**
 * One prompt of a completion request: text (encoded with the model's tokenizer once the model is known) or token
 * ids; exactly one is set.
 */
public record PromptInput(String text, int[] ids) {

    public PromptInput {
        if ((text == null) == (ids == null)) {
            throw new IllegalArgumentException("prompt: give text or token ids, exactly one");
        }
    }

    public static PromptInput text(String text) {
        return new PromptInput(text, null);
    }

    public static PromptInput ids(int[] ids) {
        return new PromptInput(null, ids.clone());
    }
}
