package io.kdapack.data.tokenizer;

/**
 * Text to token ids and back, with the special ids the data pipeline needs. Implementations: {@link ByteTokenizer}
 * here, a Hugging Face {@code tokenizer.json} in the {@code tokenizers} module, whose {@code Tokenizers} is the one
 * factory that picks between them.
 */
public interface Tokenizer {

    /** Token ids of {@code text} (no EOD appended). */
    int[] encode(String text);

    /** Text of {@code ids[offset … offset+length−1]}; special ids are skipped. */
    String decode(int[] ids, int offset, int length);

    /** Number of ids, specials included. */
    int vocabSize();

    /** The end-of-document id appended to every document. */
    int eodId();

    /** The pad id, or −1 when the tokenizer has none (Megatron's convention). */
    int padId();
}
