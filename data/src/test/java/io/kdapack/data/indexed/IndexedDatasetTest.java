package io.kdapack.data.indexed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.GoldenFiles;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The .bin/.idx reader against Megatron's own files, the writer byte for byte, every dtype and the map windows. */
class IndexedDatasetTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"v1000_u16", "v70000_i32", "v100_loss"})
    void readerMatchesCorpusSafetensors(String corpus) throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron/" + corpus + "/corpus.safetensors");
        IndexedDataset dataset = IndexedDataset.open(GoldenFiles.path("megatron/" + corpus).resolve("docs"));
        int[] lengths = golden.get("document_lengths").toIntArray();
        long[] pointers = golden.get("sequence_pointers").toLongArray();
        long[] documentIndices = golden.get("document_indices").toLongArray();
        int[] tokens = golden.get("tokens").toIntArray();
        assertEquals(Integer.parseInt(golden.meta("bin_dtype_code")), dataset.dtype().code(), "dtype code");
        assertEquals(lengths.length, dataset.sequenceCount(), "sequence count");
        assertEquals(documentIndices.length - 1, dataset.documentCount(), "document count");
        assertEquals(tokens.length, dataset.tokenCount(), "token count");
        int at = 0;
        for (int s = 0; s < lengths.length; s++) {
            assertEquals(lengths[s], dataset.sequenceLength(s), "length " + s);
            assertEquals(pointers[s], dataset.sequencePointer(s), "pointer " + s);
            assertArrayEquals(Arrays.copyOfRange(tokens, at, at + lengths[s]), dataset.sequence(s), "sequence " + s);
            at += lengths[s];
        }
        for (int d = 0; d < documentIndices.length; d++) {
            assertEquals(documentIndices[d], dataset.documentIndex(d), "document_indices " + d);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"v1000_u16", "v70000_i32", "v100_loss"})
    void writerReproducesMegatronsFilesByteForByte(String corpus) throws IOException {
        Path source = GoldenFiles.path("megatron/" + corpus).resolve("docs");
        IndexedDataset megatron = IndexedDataset.open(source);
        Path prefix = dir.resolve(corpus);
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, megatron.dtype())) {
            for (int s = 0; s < megatron.sequenceCount(); s++) {
                builder.addDocument(megatron.sequence(s));
            }
            builder.finish();
        }
        assertArrayEquals(Files.readAllBytes(IndexedDataset.idxPath(source)), Files.readAllBytes(IndexedDataset.idxPath(prefix)));
        assertArrayEquals(Files.readAllBytes(IndexedDataset.binPath(source)), Files.readAllBytes(IndexedDataset.binPath(prefix)));
        try (var files = Files.list(dir)) {
            assertEquals(2, files.count(), "no temporary files left behind");
        }
    }

    @ParameterizedTest
    @EnumSource(TokenDType.class)
    void everyDtypeRoundTrips(TokenDType dtype) throws IOException {
        Random random = new Random(dtype.code());
        int[][] documents = new int[17][];
        for (int d = 0; d < documents.length; d++) {
            documents[d] = new int[random.nextInt(40)];
            for (int i = 0; i < documents[d].length; i++) {
                long span = Math.min(dtype.maxValue(), Integer.MAX_VALUE) - Math.max(dtype.minValue(), Integer.MIN_VALUE);
                documents[d][i] = (int) (Math.max(dtype.minValue(), Integer.MIN_VALUE) + (long) (random.nextDouble() * span));
            }
        }
        Path prefix = dir.resolve("all");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, dtype)) {
            for (int[] document : documents) {
                builder.addDocument(document);
            }
            builder.finish();
        }
        IndexedDataset dataset = IndexedDataset.open(prefix);
        assertEquals(dtype, dataset.dtype());
        assertEquals(Files.size(IndexedDataset.binPath(prefix)), dataset.tokenCount() * dtype.byteSize());
        for (int d = 0; d < documents.length; d++) {
            assertArrayEquals(documents[d], dataset.sequence(d), dtype + " document " + d);
        }
    }

    @Test
    void multiSequenceDocumentsAndEmptyDataset() throws IOException {
        Path prefix = dir.resolve("multi");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.UINT16)) {
            builder.addSequence(new int[] {1, 2, 3}, 0, 3);
            builder.addSequence(new int[] {9, 4, 5, 9}, 1, 2);
            builder.endDocument();
            builder.addDocument(new int[] {6});
            builder.finish();
        }
        IndexedDataset dataset = IndexedDataset.open(prefix);
        assertEquals(3, dataset.sequenceCount());
        assertEquals(2, dataset.documentCount());
        assertEquals(2, dataset.documentIndex(1));
        assertArrayEquals(new int[] {4, 5}, dataset.sequence(1));

        Path empty = dir.resolve("empty");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(empty, TokenDType.INT32)) {
            builder.finish();
        }
        IndexedDataset none = IndexedDataset.open(empty);
        assertEquals(0, none.sequenceCount());
        assertEquals(0, none.documentCount());
    }

    @Test
    void builderRefusesBadInputAndAbandonsCleanly() throws IOException {
        Path prefix = dir.resolve("bad");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.UINT16)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> builder.addDocument(new int[] {1, 65536}));
            assertTrue(e.getMessage().contains("65536") && e.getMessage().contains("uint16"), e.getMessage());
            builder.addSequence(new int[] {1}, 0, 1);
            assertThrows(IllegalStateException.class, builder::finish, "sequence outside any document");
        }
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count(), "close() without finish() deletes the temporary files");
        }
        assertFalse(Files.exists(IndexedDataset.idxPath(prefix)));
    }

    @Test
    void readTokensChecksItsArguments() throws IOException {
        IndexedDataset dataset = IndexedDataset.open(GoldenFiles.path("megatron/v100_loss").resolve("docs"));
        int[] dst = new int[8];
        int length = dataset.sequenceLength(0);
        assertThrows(IllegalArgumentException.class, () -> dataset.readTokens(-1, 0, 1, dst, 0));
        assertThrows(IllegalArgumentException.class, () -> dataset.readTokens(dataset.sequenceCount(), 0, 1, dst, 0));
        assertThrows(IllegalArgumentException.class, () -> dataset.readTokens(0, length, 1, dst, 0));
        assertThrows(IllegalArgumentException.class, () -> dataset.readTokens(0, 0, 1, dst, 8));
        assertThrows(IllegalArgumentException.class, () -> dataset.sequenceLength(Integer.MIN_VALUE));
    }

    /** Tiny windows put window boundaries inside sequences and inside the .idx arrays' elements. */
    @ParameterizedTest
    @ValueSource(longs = {8, 16, 40, 1024})
    void smallWindowsReadTheSameData(long windowBytes) throws IOException {
        for (String corpus : new String[] {"v1000_u16", "v70000_i32"}) {
            Path prefix = GoldenFiles.path("megatron/" + corpus).resolve("docs");
            IndexedDataset whole = IndexedDataset.open(prefix);
            IndexedDataset windowed = IndexedDataset.open(prefix, windowBytes);
            for (int s = 0; s < whole.sequenceCount(); s++) {
                assertEquals(whole.sequencePointer(s), windowed.sequencePointer(s));
                assertArrayEquals(whole.sequence(s), windowed.sequence(s), corpus + " sequence " + s);
            }
        }
    }

    /**
     * A sparse {@code .bin} of 2 GiB + 4 KiB: byte offsets past 2^31, reads that cross the 1 GiB and 2 GiB window
     * boundaries, and a sequence whose pointer does not fit an int. Only the pages written use disk space.
     */
    @Test
    void datasetsLargerThanTwoGibWork() throws IOException {
        Path prefix = dir.resolve("huge");
        int firstLength = (1 << 30) + 1024; // uint16 tokens: 2^31 + 2048 bytes
        int[] lengths = {firstLength, 1000};
        long binBytes = 2L * (firstLength + 1000);
        try (RandomAccessFile bin = new RandomAccessFile(IndexedDataset.binPath(prefix).toFile(), "rw")) {
            bin.setLength(binBytes);
        }
        int[] tail = new int[1000];
        for (int i = 0; i < tail.length; i++) {
            tail[i] = 60000 + i;
        }
        try (FileChannel ch = FileChannel.open(IndexedDataset.binPath(prefix), StandardOpenOption.WRITE)) {
            writeUint16(ch, 2L * firstLength, tail);
            writeUint16(ch, (1L << 30) - 6, new int[] {11, 12, 13, 14, 15, 16});   // straddles 1 GiB
            writeUint16(ch, (1L << 31) - 4, new int[] {21, 22, 23, 24});           // straddles 2 GiB
        }
        ByteBuffer idx = ByteBuffer.allocate(34 + 12 * 2 + 8 * 3).order(ByteOrder.LITTLE_ENDIAN);
        idx.put(IndexedDataset.MAGIC).putLong(1).put((byte) 8).putLong(2).putLong(3);
        idx.putInt(lengths[0]).putInt(lengths[1]).putLong(0).putLong(2L * firstLength).putLong(0).putLong(1).putLong(2);
        Files.write(IndexedDataset.idxPath(prefix), idx.array());

        IndexedDataset dataset = IndexedDataset.open(prefix);
        assertEquals(2L * firstLength, dataset.sequencePointer(1));
        assertArrayEquals(tail, dataset.sequence(1));
        int[] dst = new int[8];
        dataset.readTokens(0, (1 << 29) - 4, 8, dst, 0);
        assertArrayEquals(new int[] {0, 11, 12, 13, 14, 15, 16, 0}, dst);
        dataset.readTokens(0, (1 << 30) - 3, 6, dst, 0);
        assertArrayEquals(new int[] {0, 21, 22, 23, 24, 0}, Arrays.copyOf(dst, 6));
        dataset.readTokens(0, firstLength - 2, 2, dst, 0);
        assertArrayEquals(new int[] {0, 0}, Arrays.copyOf(dst, 2));
    }

    private static void writeUint16(FileChannel ch, long position, int[] values) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(2 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : values) {
            b.putShort((short) v);
        }
        b.flip();
        while (b.hasRemaining()) {
            ch.write(b, position + b.position());
        }
    }
}
