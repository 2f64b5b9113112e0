package io.kdapack.core.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.testkit.Golden;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafeTensorsTest {

    @Test
    void readsGoldenFile() throws Exception {
        Path file = Golden.path("kda/02_varlen_short_docs.safetensors");
        SafeTensors st = SafeTensors.read(file);
        assertEquals("packed_cu_seqlens", st.meta("layout"));
        assertArrayEquals(new int[] {0, 1, 63, 64, 128, 129, 200}, st.get("cu_seqlens").toIntArray());
        assertArrayEquals(new long[] {1, 200, 2, 32}, st.get("q").shape());
        assertEquals(DType.F64, st.get("o").dtype());
    }

    @Test
    void roundTripsEveryWritableDtype(@TempDir Path dir) throws Exception {
        SafeTensors st = SafeTensors.builder().meta("k", "v")
                .put(Tensor.of("f", new float[] {1.5f, -2f, 3f, 4f, 5f, 6f}, 2, 3))
                .put(Tensor.of("d", new double[] {Math.PI}))
                .put(Tensor.of("i", new int[] {7, -8}, 2))
                .put(Tensor.of("l", new long[] {1L << 40}, 1))
                .build();
        Path file = dir.resolve("x.safetensors");
        st.write(file);
        SafeTensors back = SafeTensors.read(file);
        assertEquals(Map.of("k", "v"), back.metadata());
        assertArrayEquals(new float[] {1.5f, -2f, 3f, 4f, 5f, 6f}, back.get("f").toFloatArray());
        assertArrayEquals(new long[] {2, 3}, back.get("f").shape());
        assertArrayEquals(new double[] {Math.PI}, back.get("d").toDoubleArray());
        assertEquals(0, back.get("d").rank());
        assertArrayEquals(new int[] {7, -8}, back.get("i").toIntArray());
        assertArrayEquals(new long[] {1L << 40}, back.get("l").toLongArray());
        assertEquals(0, (Files.size(file) - 8) % 8 == 0 ? 0 : 1, "header padded to 8 bytes");
    }

    @Test
    void readsHalfPrecision() throws Exception {
        // 1.0 in F16 is 0x3C00, in BF16 0x3F80; -2.0 is 0xC000 and 0xC000.
        byte[] file = raw("{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]}}",
                new byte[] {0x00, 0x3C, 0x00, (byte) 0xC0, (byte) 0x80, 0x3F, 0x00, (byte) 0xC0});
        SafeTensors st = SafeTensors.parse("mem", file);
        assertArrayEquals(new float[] {1f, -2f}, st.get("h").toFloatArray());
        assertArrayEquals(new float[] {1f, -2f}, st.get("b").toFloatArray());
    }

    @Test
    void rejectsCorruptHeadersWithMessagesNamingTheField() {
        List<String[]> cases = List.of(
                new String[] {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", "data_offsets"},
                new String[] {"{\"a\":{\"dtype\":\"Q7\",\"shape\":[2],\"data_offsets\":[0,8]}}", "dtype"},
                new String[] {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", "shape"},
                new String[] {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "begin at 4"},
                new String[] {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "data section"},
                new String[] {"{\"a\":", "malformed JSON"},
                new String[] {"[1,2]", "expected a JSON object"});
        for (String[] c : cases) {
            SafeTensorsException e = assertThrows(SafeTensorsException.class,
                    () -> SafeTensors.parse("bad.safetensors", raw(c[0], new byte[8])), c[0]);
            assertTrue(e.getMessage().contains(c[1]) && e.getMessage().startsWith("bad.safetensors"),
                    "message for " + c[0] + ": " + e.getMessage());
        }
        assertThrows(SafeTensorsException.class, () -> SafeTensors.parse("short", new byte[3]));
        byte[] hugeHeader = new byte[16];
        ByteBuffer.wrap(hugeHeader).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
        assertThrows(SafeTensorsException.class, () -> SafeTensors.parse("huge", hugeHeader));
    }

    private static byte[] raw(String header, byte[] data) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h).put(data);
        return b.array();
    }
}
