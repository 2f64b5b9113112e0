package io.kdapack.data.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * UTF-8 bytes as token ids: ids 0–255 are the byte values, {@value #EOD} is end of document, {@value #PAD} padding;
 * 258 ids in all. Lossless for any text; decoding replaces malformed UTF-8 sequences with U+FFFD.
 */
public final class ByteTokenizer implements Tokenizer {
    public static final int EOD = 256;
    public static final int PAD = 257;
    public static final int VOCAB_SIZE = 258;

    @Override
    public int[] encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            ids[i] = bytes[i] & 0xFF;
        }
        return ids;
    }

    @Override
    public String decode(int[] ids, int offset, int length) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(length);
        for (int i = offset; i < offset + length; i++) {
            int id = ids[i];
            if (id < 0 || id >= VOCAB_SIZE) {
                throw new IllegalArgumentException("token id " + id + " at index " + i + " outside the byte vocabulary [0, "
                        + VOCAB_SIZE + ")");
            }
            if (id < 256) {
                bytes.write(id);
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    @Override
    public int eodId() {
        return EOD;
    }

    @Override
    public int padId() {
        return PAD;
    }
}
