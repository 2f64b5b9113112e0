package io.kdapack.data.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ByteTokenizerTest {
    private final ByteTokenizer tokenizer = new ByteTokenizer();

    @Test
    void utf8BytesRoundTripAndSpecialsAreSkipped() {
        String text = "héllo, 世界 🙂";
        int[] ids = tokenizer.encode(text);
        assertEquals(text.getBytes(java.nio.charset.StandardCharsets.UTF_8).length, ids.length);
        assertArrayEquals(new int[] {'h', 0xC3, 0xA9}, java.util.Arrays.copyOf(ids, 3));
        int[] withSpecials = new int[ids.length + 2];
        System.arraycopy(ids, 0, withSpecials, 1, ids.length);
        withSpecials[0] = ByteTokenizer.PAD;
        withSpecials[ids.length + 1] = ByteTokenizer.EOD;
        assertEquals(text, tokenizer.decode(withSpecials, 0, withSpecials.length));
        assertEquals(258, tokenizer.vocabSize());
        assertEquals(256, tokenizer.eodId());
        assertEquals(257, tokenizer.padId());
    }

    @Test
    void unknownIdsAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> tokenizer.decode(new int[] {65, 258}, 0, 2));
        assertEquals("token id 258 at index 1 outside the byte vocabulary [0, 258)", e.getMessage());
    }
}
