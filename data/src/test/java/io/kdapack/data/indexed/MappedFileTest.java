package io.kdapack.data.indexed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Window arithmetic: every scalar at every position reads the same as from one heap buffer. */
class MappedFileTest {
    @TempDir
    Path dir;

    @Test
    void scalarsAtEveryPositionAcrossWindowBoundaries() throws IOException {
        byte[] bytes = new byte[203];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 37 + 11);
        }
        Path file = dir.resolve("f");
        Files.write(file, bytes);
        ByteBuffer reference = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        for (long window : new long[] {8, 16, 24, 64, 200, 1 << 20}) {
            MappedFile mapped = MappedFile.map(file, window);
            assertEquals(bytes.length, mapped.length());
            for (int p = 0; p < bytes.length; p++) {
                assertEquals(reference.get(p), mapped.getByte(p), "byte at " + p + ", window " + window);
                if (p + 2 <= bytes.length) {
                    assertEquals(reference.getShort(p), mapped.getShort(p));
                }
                if (p + 4 <= bytes.length) {
                    assertEquals(reference.getInt(p), mapped.getInt(p));
                    assertEquals(Float.floatToRawIntBits(reference.getFloat(p)), Float.floatToRawIntBits(mapped.getFloat(p)));
                }
                if (p + 8 <= bytes.length) {
                    assertEquals(reference.getLong(p), mapped.getLong(p), "long at " + p + ", window " + window);
                }
                assertEquals(p / window, mapped.windowOf(p));
            }
        }
    }

    @Test
    void badWindowSizesAreRefused() {
        Path file = dir.resolve("g");
        assertThrows(IllegalArgumentException.class, () -> MappedFile.map(file, 12));
        assertThrows(IllegalArgumentException.class, () -> MappedFile.map(file, 0));
        assertThrows(IllegalArgumentException.class, () -> MappedFile.map(file, 1L << 31));
    }

    @Test
    void emptyFileMapsToNoWindows() throws IOException {
        Path file = dir.resolve("empty");
        Files.write(file, new byte[0]);
        assertEquals(0, MappedFile.map(file).length());
    }
}
