package io.kdapack.data.indexed;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * Writes a Megatron indexed dataset ({@code PREFIX.bin} + {@code PREFIX.idx}) byte for byte as Megatron's
 * {@code IndexedDatasetBuilder} does: sequences are appended to {@code .bin}, {@link #endDocument()} closes a
 * document, {@link #finish()} writes the {@code .idx}.
 *
 * <p>Both files are written to temporary files beside the targets and moved into place by {@link #finish()},
 * {@code .bin} first and {@code .idx} last; a crash in between leaves a new {@code .bin} beside an old {@code .idx},
 * which {@link IndexedDataset#open} rejects (the lengths disagree) rather than reading a mixture.
 * {@link #close()} without {@link #finish()} deletes the temporary files and leaves the targets untouched.
 */
public final class IndexedDatasetBuilder implements AutoCloseable {
    private final Path prefix;
    private final TokenDType dtype;
    private final Path binTmp;
    private final OutputStream bin;
    private final ByteBuffer encodeBuffer;
    private int[] sequenceLengths = new int[1024];
    private int sequenceCount;
    private long[] documentIndices = new long[1024];
    private int documentIndexCount;
    private boolean finished;
    private boolean closed;

    /** Starts a dataset at {@code PREFIX.bin/.idx} storing tokens as {@code dtype}. */
    public IndexedDatasetBuilder(Path prefix, TokenDType dtype) throws IOException {
        this.prefix = prefix.toAbsolutePath();
        this.dtype = dtype;
        Path dir = this.prefix.getParent();
        Files.createDirectories(dir);
        this.binTmp = Files.createTempFile(dir, "." + this.prefix.getFileName() + ".bin", ".tmp");
        this.bin = new BufferedOutputStream(Files.newOutputStream(binTmp, StandardOpenOption.WRITE), 1 << 20);
        this.encodeBuffer = ByteBuffer.allocate(64 * 1024).order(ByteOrder.LITTLE_ENDIAN);
        documentIndices[documentIndexCount++] = 0;
    }

    public TokenDType dtype() {
        return dtype;
    }

    /**
     * Appends one sequence ({@code tokens[offset … offset+length−1]}); every value must fit {@link #dtype()}.
     */
    public void addSequence(int[] tokens, int offset, int length) throws IOException {
        checkOpen();
        if (offset < 0 || length < 0 || offset > tokens.length - length) {
            throw new IllegalArgumentException("range [" + offset + ", " + ((long) offset + length)
                    + ") outside an array of length " + tokens.length);
        }
        for (int i = offset; i < offset + length; i++) {
            if (!dtype.holds(tokens[i])) {
                throw new IllegalArgumentException("token id " + tokens[i] + " at index " + i + " does not fit dtype "
                        + dtype.name().toLowerCase(java.util.Locale.ROOT) + " [" + dtype.minValue() + ", "
                        + dtype.maxValue() + "]");
            }
        }
        write(tokens, offset, length);
        if (sequenceCount == sequenceLengths.length) {
            sequenceLengths = Arrays.copyOf(sequenceLengths, sequenceLengths.length * 2);
        }
        sequenceLengths[sequenceCount++] = length;
    }

    /** Closes the current document: the sequences added since the previous call form one document. */
    public void endDocument() {
        checkOpen();
        if (documentIndexCount == documentIndices.length) {
            documentIndices = Arrays.copyOf(documentIndices, documentIndices.length * 2);
        }
        documentIndices[documentIndexCount++] = sequenceCount;
    }

    /** Appends a document of one sequence (what {@code preprocess_data.py} writes without sentence splitting). */
    public void addDocument(int[] tokens) throws IOException {
        addSequence(tokens, 0, tokens.length);
        endDocument();
    }

    /** Sequences added so far. */
    public int sequenceCount() {
        return sequenceCount;
    }

    /** Writes {@code .idx} and moves both files into place. */
    public void finish() throws IOException {
        checkOpen();
        if (documentIndices[documentIndexCount - 1] != sequenceCount) {
            throw new IllegalStateException((sequenceCount - documentIndices[documentIndexCount - 1])
                    + " sequences were added after the last endDocument()");
        }
        bin.close();
        forceToDisk(binTmp);
        byte[] index = indexBytes();
        Path idxFile = IndexedDataset.idxPath(prefix);
        Path idxTmp = Files.createTempFile(prefix.getParent(), "." + prefix.getFileName() + ".idx", ".tmp");
        try {
            Files.write(idxTmp, index);
            forceToDisk(idxTmp);
            Files.move(binTmp, IndexedDataset.binPath(prefix), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
            Files.move(idxTmp, idxFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(idxTmp);
        }
        finished = true;
        closed = true;
    }

    /** Abandons an unfinished dataset: deletes the temporary files. A no-op after {@link #finish()}. */
    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            try {
                bin.close();
            } finally {
                Files.deleteIfExists(binTmp);
            }
        }
    }

    public boolean finished() {
        return finished;
    }

    private byte[] indexBytes() {
        long size = IndexedDataset.HEADER_BYTES + 12L * sequenceCount + 8L * documentIndexCount;
        ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(size)).order(ByteOrder.LITTLE_ENDIAN);
        b.put(IndexedDataset.MAGIC).putLong(IndexedDataset.VERSION).put((byte) dtype.code())
                .putLong(sequenceCount).putLong(documentIndexCount);
        for (int i = 0; i < sequenceCount; i++) {
            b.putInt(sequenceLengths[i]);
        }
        long pointer = 0;
        for (int i = 0; i < sequenceCount; i++) {
            b.putLong(pointer);
            pointer += (long) sequenceLengths[i] * dtype.byteSize();
        }
        for (int i = 0; i < documentIndexCount; i++) {
            b.putLong(documentIndices[i]);
        }
        return b.array();
    }

    private void write(int[] tokens, int offset, int length) throws IOException {
        int perChunk = encodeBuffer.capacity() / dtype.byteSize();
        for (int start = offset; start < offset + length; start += perChunk) {
            int end = Math.min(offset + length, start + perChunk);
            encodeBuffer.clear();
            for (int i = start; i < end; i++) {
                int v = tokens[i];
                switch (dtype) {
                    case UINT8, INT8 -> encodeBuffer.put((byte) v);
                    case UINT16, INT16 -> encodeBuffer.putShort((short) v);
                    case INT32 -> encodeBuffer.putInt(v);
                    case INT64 -> encodeBuffer.putLong(v);
                    case FLOAT32 -> encodeBuffer.putFloat(v);
                    case FLOAT64 -> encodeBuffer.putDouble(v);
                }
            }
            bin.write(encodeBuffer.array(), 0, encodeBuffer.position());
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("builder for " + prefix + " is already " + (finished ? "finished" : "closed"));
        }
    }

    private static void forceToDisk(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.force(true);
        }
    }
}
