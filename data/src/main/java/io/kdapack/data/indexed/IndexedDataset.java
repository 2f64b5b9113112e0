package io.kdapack.data.indexed;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A Megatron indexed dataset ({@code PREFIX.idx} + {@code PREFIX.bin}, {@code IndexedDataset} version 1), memory
 * mapped read-only. Both files may exceed 2 GiB.
 *
 * <p>{@code .idx} layout (little-endian): magic {@code "MMIDIDX\0\0"} (9 bytes), u64 version 1, u8 dtype code,
 * u64 sequence count S, u64 document-index count D, int32 {@code sequence_lengths[S]}, int64
 * {@code sequence_pointers[S]} (byte offsets into {@code .bin}), int64 {@code document_indices[D]}. {@code .bin} holds
 * the S sequences back to back.
 *
 * <p>{@link #open} validates everything before returning: the magic, the version, the dtype code, that the
 * {@code .idx} length is exactly what S and D imply, every length non-negative, every pointer equal to the running
 * sum of the lengths before it, the {@code .bin} length equal to the total, and {@code document_indices}
 * starting at 0, non-decreasing and ending at S. Anything else is an {@link IndexedDatasetException} naming the file,
 * the field and the expected and found values, so a reader never sees a short or inconsistent dataset.
 *
 * <p>Immutable after {@link #open}; reads use absolute positions only, so threads may share one instance.
 */
public final class IndexedDataset {
    /** The 9 magic bytes that open every {@code .idx} file. */
    static final byte[] MAGIC = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
    static final long VERSION = 1;
    static final int HEADER_BYTES = 34;
    static final int DTYPE_OFFSET = 17;

    private final MappedFile idx;
    private final MappedFile bin;
    private final TokenDType dtype;
    private final int sequenceCount;
    private final int documentIndexCount;
    private final long tokenCount;

    private IndexedDataset(MappedFile idx, MappedFile bin, TokenDType dtype, int sequenceCount, int documentIndexCount,
                           long tokenCount) {
        this.idx = idx;
        this.bin = bin;
        this.dtype = dtype;
        this.sequenceCount = sequenceCount;
        this.documentIndexCount = documentIndexCount;
        this.tokenCount = tokenCount;
    }

    /** {@code PREFIX.idx}. */
    public static Path idxPath(Path prefix) {
        return prefix.resolveSibling(prefix.getFileName() + ".idx");
    }

    /** {@code PREFIX.bin}. */
    public static Path binPath(Path prefix) {
        return prefix.resolveSibling(prefix.getFileName() + ".bin");
    }

    /** Opens and validates {@code PREFIX.idx} and {@code PREFIX.bin}. */
    public static IndexedDataset open(Path prefix) throws IOException {
        return open(prefix, MappedFile.DEFAULT_WINDOW_BYTES);
    }

    /** As {@link #open(Path)} with map windows of {@code windowBytes} (tests use small windows). */
    static IndexedDataset open(Path prefix, long windowBytes) throws IOException {
        Path idxFile = idxPath(prefix);
        Path binFile = binPath(prefix);
        for (Path p : new Path[] {idxFile, binFile}) {
            if (!Files.isRegularFile(p)) {
                throw new NoSuchFileException(p.toString(), null, "Megatron indexed dataset file not found");
            }
        }
        MappedFile idx = MappedFile.map(idxFile, windowBytes);
        MappedFile bin = MappedFile.map(binFile, windowBytes);
        return validate(idx, bin);
    }

    /** Validates already mapped (or wrapped) files; the entry point for tests that mutate bytes in memory. */
    static IndexedDataset validate(MappedFile idx, MappedFile bin) throws IndexedDatasetException {
        long idxLength = idx.length();
        if (idxLength < HEADER_BYTES) {
            throw corrupt(idx, "header", HEADER_BYTES + " bytes at least", idxLength + " bytes (truncated)");
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (idx.getByte(i) != MAGIC[i]) {
                throw corrupt(idx, "magic", hex(MAGIC, MAGIC.length) + " (\"MMIDIDX\\0\\0\")",
                        hex(idx, MAGIC.length) + " (not a Megatron .idx file)");
            }
        }
        long version = idx.getLong(9);
        if (version != VERSION) {
            throw corrupt(idx, "version", Long.toString(VERSION), Long.toUnsignedString(version));
        }
        int code = Byte.toUnsignedInt(idx.getByte(DTYPE_OFFSET));
        TokenDType dtype = TokenDType.ofCode(code);
        if (dtype == null) {
            throw corrupt(idx, "dtype code", "one of 1..8 " + Arrays.toString(TokenDType.values()), Integer.toString(code));
        }
        long sequences = idx.getLong(18);
        long documentIndices = idx.getLong(26);
        long maxSequences = (idxLength - HEADER_BYTES) / 12;
        if (sequences < 0 || sequences > maxSequences || sequences > Integer.MAX_VALUE - 8) {
            throw corrupt(idx, "sequence_count", "at most " + Math.min(maxSequences, Integer.MAX_VALUE - 8)
                    + " for a file of " + idxLength + " bytes", Long.toUnsignedString(sequences));
        }
        long remaining = idxLength - HEADER_BYTES - 12 * sequences;
        if (documentIndices < 1 || documentIndices > remaining / 8 || documentIndices > Integer.MAX_VALUE - 8) {
            throw corrupt(idx, "document_count", "between 1 and " + Math.min(remaining / 8, Integer.MAX_VALUE - 8)
                    + " (what the file length leaves after " + sequences + " sequences)",
                    Long.toUnsignedString(documentIndices));
        }
        long expectedLength = HEADER_BYTES + 12 * sequences + 8 * documentIndices;
        if (idxLength != expectedLength) {
            throw corrupt(idx, "file length", expectedLength + " bytes for sequence_count " + sequences
                    + " and document_count " + documentIndices, idxLength + " bytes"
                    + (idxLength == expectedLength + sequences ? " (a multimodal index, not supported)" : ""));
        }
        int s = (int) sequences;
        long pointersAt = HEADER_BYTES + 4L * s;
        long expectedPointer = 0;
        for (int i = 0; i < s; i++) {
            int length = idx.getInt(HEADER_BYTES + 4L * i);
            if (length < 0) {
                throw corrupt(idx, "sequence_lengths[" + i + "]", "a length >= 0", Integer.toString(length));
            }
            long pointer = idx.getLong(pointersAt + 8L * i);
            if (pointer != expectedPointer) {
                throw corrupt(idx, "sequence_pointers[" + i + "]", expectedPointer + " (running sum of lengths x "
                        + dtype.byteSize() + " bytes)", Long.toString(pointer));
            }
            expectedPointer += (long) length * dtype.byteSize();
        }
        if (bin.length() != expectedPointer) {
            throw new IndexedDatasetException(bin.path() + ": file length: expected " + expectedPointer
                    + " bytes (" + expectedPointer / dtype.byteSize() + " " + dtype.name().toLowerCase(java.util.Locale.ROOT)
                    + " tokens listed in " + idx.path().getFileName() + "), found " + bin.length() + " bytes");
        }
        long documentsAt = pointersAt + 8L * s;
        long previous = 0;
        for (int i = 0; i < (int) documentIndices; i++) {
            long value = idx.getLong(documentsAt + 8L * i);
            boolean last = i == documentIndices - 1;
            if (i == 0 && value != 0) {
                throw corrupt(idx, "document_indices[0]", "0", Long.toString(value));
            }
            if (value < previous || value > s) {
                throw corrupt(idx, "document_indices[" + i + "]", "a value in [" + previous + ", " + s + "]",
                        Long.toString(value));
            }
            if (last && value != s) {
                throw corrupt(idx, "document_indices[" + i + "] (last)", "sequence_count " + s, Long.toString(value));
            }
            previous = value;
        }
        return new IndexedDataset(idx, bin, dtype, s, (int) documentIndices, expectedPointer / dtype.byteSize());
    }

    private static IndexedDatasetException corrupt(MappedFile file, String field, String expected, String found) {
        return new IndexedDatasetException(file.path() + ": " + field + ": expected " + expected + ", found " + found);
    }

    private static String hex(byte[] bytes, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : " ").append(String.format("%02X", bytes[i]));
        }
        return sb.toString();
    }

    private static String hex(MappedFile file, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = file.getByte(i);
        }
        return hex(b, n);
    }

    public TokenDType dtype() {
        return dtype;
    }

    /** S: the number of sequences (one per document when written without sentence splitting). */
    public int sequenceCount() {
        return sequenceCount;
    }

    /** The number of documents: {@code document_indices} has one more entry. */
    public int documentCount() {
        return documentIndexCount - 1;
    }

    /** {@code document_indices[i]} for {@code i} in {@code [0, documentCount()]}: the first sequence of document i. */
    public long documentIndex(int i) {
        if (i < 0 || i >= documentIndexCount) {
            throw new IllegalArgumentException("document index " + i + " outside [0, " + documentIndexCount + ")");
        }
        return idx.getLong(HEADER_BYTES + 12L * sequenceCount + 8L * i);
    }

    /** Total tokens in {@code .bin}. */
    public long tokenCount() {
        return tokenCount;
    }

    /** Tokens in {@code sequence}. */
    public int sequenceLength(int sequence) {
        checkSequence(sequence);
        return idx.getInt(HEADER_BYTES + 4L * sequence);
    }

    /** Byte offset of {@code sequence} in {@code .bin}. */
    public long sequencePointer(int sequence) {
        checkSequence(sequence);
        return idx.getLong(HEADER_BYTES + 4L * sequenceCount + 8L * sequence);
    }

    /** All tokens of {@code sequence}. */
    public int[] sequence(int sequence) {
        int[] tokens = new int[sequenceLength(sequence)];
        readTokens(sequence, 0, tokens.length, tokens, 0);
        return tokens;
    }

    /**
     * Copies tokens {@code offset … offset+count−1} of {@code sequence} into {@code dst[dstOffset…]}; allocation free.
     *
     * @throws IllegalArgumentException when the range lies outside the sequence or {@code dst}
     * @throws IllegalStateException    when a stored value is no int token id (int64/float files only)
     */
    public void readTokens(int sequence, int offset, int count, int[] dst, int dstOffset) {
        int length = sequenceLength(sequence);
        if (offset < 0 || count < 0 || offset > length - count) {
            throw new IllegalArgumentException("tokens [" + offset + ", " + ((long) offset + count) + ") outside sequence "
                    + sequence + " of length " + length);
        }
        if (dstOffset < 0 || dstOffset > dst.length - count) {
            throw new IllegalArgumentException("destination [" + dstOffset + ", " + ((long) dstOffset + count)
                    + ") outside an array of length " + dst.length);
        }
        int size = dtype.byteSize();
        long position = sequencePointer(sequence) + (long) offset * size;
        int done = 0;
        while (done < count) {
            // Sequences start at multiples of the element size and windows at multiples of 8: no element straddles.
            int n = (int) Math.min(count - done, bin.bytesInWindow(position) / size);
            copy(bin.window(bin.windowOf(position)), bin.offsetInWindow(position), n, dst, dstOffset + done, sequence);
            done += n;
            position += (long) n * size;
        }
    }

    private void copy(ByteBuffer window, int at, int n, int[] dst, int to, int sequence) {
        switch (dtype) {
            case UINT16 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = window.getShort(at + 2 * i) & 0xFFFF;
                }
            }
            case INT32 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = window.getInt(at + 4 * i);
                }
            }
            case UINT8 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = window.get(at + i) & 0xFF;
                }
            }
            case INT8 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = window.get(at + i);
                }
            }
            case INT16 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = window.getShort(at + 2 * i);
                }
            }
            case INT64 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = toTokenId(window.getLong(at + 8 * i), sequence);
                }
            }
            case FLOAT32 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = toTokenId(window.getFloat(at + 4 * i), sequence);
                }
            }
            case FLOAT64 -> {
                for (int i = 0; i < n; i++) {
                    dst[to + i] = toTokenId(window.getDouble(at + 8 * i), sequence);
                }
            }
        }
    }

    private int toTokenId(long value, int sequence) {
        if (value != (int) value) {
            throw new IllegalStateException(bin.path() + ": sequence " + sequence + ": value " + value
                    + " is not an int token id");
        }
        return (int) value;
    }

    private int toTokenId(double value, int sequence) {
        if (value != (int) value) {
            throw new IllegalStateException(bin.path() + ": sequence " + sequence + ": value " + value
                    + " is not an int token id");
        }
        return (int) value;
    }

    private void checkSequence(int sequence) {
        if (sequence < 0 || sequence >= sequenceCount) {
            throw new IllegalArgumentException("sequence " + sequence + " outside [0, " + sequenceCount + ")");
        }
    }

    @Override
    public String toString() {
        return "IndexedDataset[" + idx.path() + ", " + dtype.name().toLowerCase(java.util.Locale.ROOT) + ", "
                + sequenceCount + " sequences, " + documentCount() + " documents, " + tokenCount + " tokens]";
    }
}
