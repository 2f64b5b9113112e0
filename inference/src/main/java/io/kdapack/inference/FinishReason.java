package io.kdapack.inference;

/** Why a generation ended (OpenAI's {@code finish_reason} values). */
public enum FinishReason {
    /** The end-of-document token was generated, or the text reached a stop string. */
    STOP,
    /** {@code max_tokens} tokens were generated. */
    LENGTH,
    /** The request was cancelled (its client went away) before it ended. */
    CANCELLED;

    /** The wire name: {@code stop}, {@code length}, {@code cancelled}. */
    public String wireName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
