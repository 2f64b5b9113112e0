package io.kdapack.data.tokenizer;

/** Text to token ids and back, with the special ids the data pipeline needs. */
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

    /** A tokenizer by its command-line name: {@code byte}. */
    static Tokenizer byName(String name) {
        if (name.equals("byte")) {
            return new ByteTokenizer();
        }
        throw new IllegalArgumentException("unknown tokenizer '" + name + "' (available: byte)");
    }
}
