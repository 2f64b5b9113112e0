package io.kdapack.data.indexed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Truncated, corrupt, foreign and inconsistent files: every case ends in {@link IndexedDatasetException} whose message
 * names the file and the field with expected and found values; never an out-of-bounds or other exception.
 */
class IndexedDatasetCorruptionTest {
    private static final int SEQUENCES = 20;

    @TempDir
    Path dir;
    private byte[] idx;
    private byte[] bin;

    @BeforeEach
    void writeSmallDataset() throws IOException {
        Path prefix = dir.resolve("good");
        Random random = new Random(3);
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.UINT16)) {
            for (int d = 0; d < SEQUENCES; d++) {
                int[] doc = new int[1 + random.nextInt(12)];
                Arrays.setAll(doc, i -> random.nextInt(1000));
                builder.addDocument(doc);
            }
            builder.finish();
        }
        idx = Files.readAllBytes(IndexedDataset.idxPath(prefix));
        bin = Files.readAllBytes(IndexedDataset.binPath(prefix));
    }

    @Test
    void truncatedBin() throws IOException {
        expectCorrupt(idx, Arrays.copyOf(bin, bin.length - 1), ".bin", "file length");
        expectCorrupt(idx, new byte[0], ".bin", "file length");
        expectCorrupt(idx, Arrays.copyOf(bin, bin.length + 2), ".bin", "file length");
    }

    @Test
    void truncatedIdx() throws IOException {
        for (int length : new int[] {0, 8, 17, 33}) {
            expectCorrupt(Arrays.copyOf(idx, length), bin, ".idx", "header");
        }
        for (int length : new int[] {34, 100, idx.length - 8, idx.length - 1}) {
            expectCorrupt(Arrays.copyOf(idx, length), bin, ".idx", "");
        }
        expectCorrupt(Arrays.copyOf(idx, idx.length + 1), bin, ".idx", "file length");
    }

    @Test
    void foreignFiles() throws IOException {
        expectCorrupt(mutate(b -> b[0] = 'X'), bin, ".idx", "magic");
        expectCorrupt(mutate(b -> b[8] = 1), bin, ".idx", "magic");
        expectCorrupt(bin, bin, ".idx", "");
        byte[] text = "{\"not\": \"an index\", \"padding\": \"................................\"}".getBytes();
        expectCorrupt(text, bin, ".idx", "magic");
    }

    @Test
    void versionAndDtype() throws IOException {
        expectCorrupt(mutate(b -> b[9] = 2), bin, ".idx", "version");
        expectCorrupt(mutate(b -> b[16] = 1), bin, ".idx", "version");
        for (int code : new int[] {0, 9, 255}) {
            expectCorrupt(mutate(b -> b[17] = (byte) code), bin, ".idx", "dtype code");
        }
        expectCorrupt(mutate(b -> b[17] = 4), bin, ".idx", "sequence_pointers[1]"); // int32: pointers disagree
    }

    @Test
    void sizesThatDisagree() throws IOException {
        expectCorrupt(mutate(b -> putLong(b, 18, SEQUENCES + 1)), bin, ".idx", "");
        expectCorrupt(mutate(b -> putLong(b, 18, SEQUENCES - 1)), bin, ".idx", "");
        expectCorrupt(mutate(b -> putLong(b, 18, -1)), bin, ".idx", "sequence_count");
        expectCorrupt(mutate(b -> putLong(b, 18, Long.MAX_VALUE)), bin, ".idx", "sequence_count");
        expectCorrupt(mutate(b -> putLong(b, 26, SEQUENCES + 2)), bin, ".idx", "document_count");
        expectCorrupt(mutate(b -> putLong(b, 26, 0)), bin, ".idx", "document_count");
        expectCorrupt(mutate(b -> putInt(b, 34 + 4 * 3, 1 + getInt(b, 34 + 4 * 3))), bin, ".idx", "sequence_pointers[4]");
        expectCorrupt(mutate(b -> putInt(b, 34 + 4 * (SEQUENCES - 1), 1 + getInt(b, 34 + 4 * (SEQUENCES - 1)))), bin,
                ".bin", "file length");
        expectCorrupt(mutate(b -> putInt(b, 34, -5)), bin, ".idx", "sequence_lengths[0]");
        int pointers = 34 + 4 * SEQUENCES;
        expectCorrupt(mutate(b -> putLong(b, pointers + 8 * 2, 1L << 40)), bin, ".idx", "sequence_pointers[2]");
        int documents = pointers + 8 * SEQUENCES;
        expectCorrupt(mutate(b -> putLong(b, documents, 1)), bin, ".idx", "document_indices[0]");
        expectCorrupt(mutate(b -> putLong(b, documents + 8 * 5, 2)), bin, ".idx", "document_indices[5]");
        expectCorrupt(mutate(b -> putLong(b, documents + 8 * SEQUENCES, SEQUENCES - 1)), bin, ".idx",
                "document_indices[" + SEQUENCES + "]");
        expectCorrupt(mutate(b -> putLong(b, documents + 8 * SEQUENCES, SEQUENCES + 1)), bin, ".idx",
                "document_indices[" + SEQUENCES + "]");
    }

    @Test
    void missingFilesAreNamed() {
        Path prefix = dir.resolve("absent");
        IOException e = assertThrows(IOException.class, () -> IndexedDataset.open(prefix));
        assertTrue(e.getMessage().contains("absent.idx"), e.getMessage());
    }

    /**
     * 3000 random mutations (1 to 4 bytes each, fixed seed) of a 442-byte .idx, validated in memory with 64-byte
     * windows (so that fields also straddle window boundaries). A mutation may leave a valid file (a
     * dtype of the same width, an empty document); then the whole dataset must read back with the right token count.
     * Anything else must be an IndexedDatasetException with a useful message.
     */
    @Test
    void randomByteMutationsOfTheIdx() throws IOException {
        Random random = new Random(20261130);
        int rejected = 0;
        for (int trial = 0; trial < 3000; trial++) {
            byte[] mutated = idx.clone();
            int changes = 1 + random.nextInt(4);
            for (int c = 0; c < changes; c++) {
                mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
            }
            if (Arrays.equals(mutated, idx)) {
                continue;
            }
            // In memory: the same validation as open() without 3000 files on disk.
            Path name = dir.resolve("m" + trial + ".idx");
            try {
                IndexedDataset dataset = IndexedDataset.validate(MappedFile.wrap(name, mutated, 64),
                        MappedFile.wrap(dir.resolve("m" + trial + ".bin"), bin, 64));
                long tokens = 0;
                for (int s = 0; s < dataset.sequenceCount(); s++) {
                    tokens += dataset.sequence(s).length;
                }
                assertEquals(bin.length / dataset.dtype().byteSize(), tokens, "trial " + trial + " reads a short dataset");
            } catch (IndexedDatasetException e) {
                assertUseful(e, "m" + trial + ".");
                rejected++;
            } catch (RuntimeException e) {
                fail("trial " + trial + " ended in " + e, e);
            }
        }
        assertTrue(rejected > 2700, "most mutations are corrupt files, rejected " + rejected);
    }

    private void expectCorrupt(byte[] idxBytes, byte[] binBytes, String file, String field) throws IOException {
        Path prefix = write("case", idxBytes, binBytes);
        IndexedDatasetException e = assertThrows(IndexedDatasetException.class, () -> IndexedDataset.open(prefix));
        assertUseful(e, "case" + file);
        assertTrue(e.getMessage().contains(field), "message names " + field + ": " + e.getMessage());
    }

    private static void assertUseful(IndexedDatasetException e, String fileName) {
        String m = e.getMessage();
        assertTrue(m.contains(fileName) && m.contains("expected") && m.contains("found"), m);
    }

    private Path write(String name, byte[] idxBytes, byte[] binBytes) throws IOException {
        Path prefix = dir.resolve(name);
        Files.write(IndexedDataset.idxPath(prefix), idxBytes);
        Files.write(IndexedDataset.binPath(prefix), binBytes);
        return prefix;
    }

    private byte[] mutate(Consumer<byte[]> change) {
        byte[] b = idx.clone();
        change.accept(b);
        return b;
    }

    private static void putLong(byte[] b, int at, long value) {
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(at, value);
    }

    private static void putInt(byte[] b, int at, int value) {
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, value);
    }

    private static int getInt(byte[] b, int at) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt(at);
    }
}
