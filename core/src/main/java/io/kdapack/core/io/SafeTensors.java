package io.kdapack.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads and writes the safetensors format: an 8-byte little-endian header length N, N bytes of JSON
 * ({@code {"__metadata__": {...}, name: {dtype, shape, data_offsets}}}), then the raw row-major data.
 *
 * <p>Reading validates everything a corrupt or foreign file could get wrong: header length against the
 * file length, JSON syntax, dtype names, shapes, offsets against shapes, and that the tensors tile the
 * data section without gaps, overlaps or trailing bytes. Writing is atomic: a temporary file in the same
 * directory is moved over the target only once complete.
 */
public final class SafeTensors {
    private static final String METADATA = "__metadata__";
    /** Headers larger than this are refused rather than allocated (the reference implementation uses 100 MB). */
    static final long MAX_HEADER_BYTES = 100L << 20;

    private final Map<String, String> metadata;
    private final Map<String, Tensor> tensors;

    /** A file's contents: metadata (string values) and tensors in file order. */
    public SafeTensors(Map<String, String> metadata, Map<String, Tensor> tensors) {
        this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        this.tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }

    public Map<String, String> metadata() {
        return metadata;
    }

    public Map<String, Tensor> tensors() {
        return tensors;
    }

    public boolean has(String name) {
        return tensors.containsKey(name);
    }

    /** The tensor {@code name}; a missing tensor is an error naming it and what the file has. */
    public Tensor get(String name) {
        Tensor t = tensors.get(name);
        if (t == null) {
            throw new IllegalArgumentException("missing tensor '" + name + "' (file has " + tensors.keySet() + ")");
        }
        return t;
    }

    /** A metadata value; a missing key is an error naming it. */
    public String meta(String key) {
        String v = metadata.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing metadata key '" + key + "'");
        }
        return v;
    }

    public String meta(String key, String fallback) {
        return metadata.getOrDefault(key, fallback);
    }

    /** Reads a whole file into memory. */
    public static SafeTensors read(Path file) throws IOException {
        long length = Files.size(file);
        if (length < 8) {
            throw new SafeTensorsException(file + ": header length: file is " + length + " bytes, expected at least 8");
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, lenBuf, 0);
            long headerLen = lenBuf.getLong(0);
            if (headerLen < 2 || headerLen > MAX_HEADER_BYTES || headerLen > length - 8) {
                throw new SafeTensorsException(file + ": header length: " + Long.toUnsignedString(headerLen)
                        + " does not fit a file of " + length + " bytes (limit " + MAX_HEADER_BYTES + ")");
            }
            ByteBuffer header = ByteBuffer.allocate((int) headerLen);
            readFully(ch, header, 8);
            long dataLen = length - 8 - headerLen;
            if (dataLen > Integer.MAX_VALUE) {
                throw new SafeTensorsException(file + ": data section of " + dataLen + " bytes exceeds 2 GiB");
            }
            ByteBuffer data = ByteBuffer.allocate((int) dataLen).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, data, 8 + headerLen);
            data.flip();
            return parse(file.toString(), new String(header.array(), StandardCharsets.UTF_8), data);
        }
    }

    /** Parses a file already in memory; {@code source} names it in error messages. */
    public static SafeTensors parse(String source, byte[] bytes) throws SafeTensorsException {
        if (bytes.length < 8) {
            throw new SafeTensorsException(source + ": header length: " + bytes.length + " bytes, expected at least 8");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long headerLen = b.getLong(0);
        if (headerLen < 2 || headerLen > MAX_HEADER_BYTES || headerLen > bytes.length - 8) {
            throw new SafeTensorsException(source + ": header length: " + Long.toUnsignedString(headerLen)
                    + " does not fit " + bytes.length + " bytes");
        }
        String json = new String(bytes, 8, (int) headerLen, StandardCharsets.UTF_8);
        ByteBuffer data = b.slice(8 + (int) headerLen, bytes.length - 8 - (int) headerLen).order(ByteOrder.LITTLE_ENDIAN);
        return parse(source, json, data);
    }

    private static SafeTensors parse(String source, String json, ByteBuffer data) throws SafeTensorsException {
        Object root;
        try {
            root = HeaderJson.parse(json);
        } catch (IllegalArgumentException e) {
            throw new SafeTensorsException(source + ": header: malformed JSON: " + e.getMessage());
        }
        if (!(root instanceof Map<?, ?> fields)) {
            throw new SafeTensorsException(source + ": header: expected a JSON object");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        record Entry(String name, DType dtype, long[] shape, long begin, long end) {}
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<?, ?> field : fields.entrySet()) {
            String name = (String) field.getKey();
            Object node = field.getValue();
            if (name.equals(METADATA)) {
                if (!(node instanceof Map<?, ?> values)) {
                    throw new SafeTensorsException(source + ": __metadata__: expected an object of strings");
                }
                for (Map.Entry<?, ?> m : values.entrySet()) {
                    if (!(m.getValue() instanceof String value)) {
                        throw new SafeTensorsException(source + ": __metadata__." + m.getKey() + ": expected a string, found "
                                + HeaderJson.write(m.getValue()));
                    }
                    metadata.put((String) m.getKey(), value);
                }
                continue;
            }
            String where = source + ": tensor '" + name + "'";
            if (!(node instanceof Map<?, ?> tensor) || !(tensor.get("dtype") instanceof String dtypeName)
                    || !(tensor.get("shape") instanceof List<?> dims)
                    || !(tensor.get("data_offsets") instanceof List<?> offsets) || offsets.size() != 2) {
                throw new SafeTensorsException(where + ": expected {dtype, shape, data_offsets[2]}, found "
                        + HeaderJson.write(node));
            }
            DType dtype;
            try {
                dtype = DType.parse(dtypeName);
            } catch (IllegalArgumentException e) {
                throw new SafeTensorsException(where + ": dtype: " + e.getMessage());
            }
            long[] shape = new long[dims.size()];
            for (int i = 0; i < shape.length; i++) {
                if (!(dims.get(i) instanceof Long d) || d < 0) {
                    throw new SafeTensorsException(where + ": shape: dimension " + i + " is " + HeaderJson.write(dims.get(i))
                            + ", expected an integer >= 0");
                }
                shape[i] = d;
            }
            if (!(offsets.get(0) instanceof Long begin) || !(offsets.get(1) instanceof Long end)) {
                throw new SafeTensorsException(where + ": data_offsets: expected two integers, found "
                        + HeaderJson.write(offsets));
            }
            long expected;
            try {
                expected = Math.multiplyExact(Tensor.elementCount(shape), (long) dtype.byteSize());
            } catch (ArithmeticException e) {
                throw new SafeTensorsException(where + ": shape " + Arrays.toString(shape) + " overflows");
            }
            if (begin < 0 || end < begin || end - begin != expected) {
                throw new SafeTensorsException(where + ": data_offsets [" + begin + ", " + end + "] hold " + (end - begin)
                        + " bytes, expected " + expected + " for " + dtype + " " + Arrays.toString(shape));
            }
            entries.add(new Entry(name, dtype, shape, begin, end));
        }
        List<Entry> byOffset = new ArrayList<>(entries);
        byOffset.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
        long cursor = 0;
        for (Entry e : byOffset) {
            if (e.begin() != cursor) {
                throw new SafeTensorsException(source + ": tensor '" + e.name() + "': data_offsets begin at " + e.begin()
                        + ", expected " + cursor + " (tensors must tile the data section without gaps or overlaps)");
            }
            cursor = e.end();
        }
        if (cursor != data.remaining()) {
            throw new SafeTensorsException(source + ": data section: tensors cover " + cursor + " bytes, file holds "
                    + data.remaining());
        }
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        for (Entry e : entries) {
            ByteBuffer slice = data.slice((int) e.begin(), (int) (e.end() - e.begin()));
            tensors.put(e.name(), new Tensor(e.name(), e.dtype(), e.shape(), slice));
        }
        return new SafeTensors(metadata, tensors);
    }

    /** Serialises to bytes: 8-byte tensors first so that every tensor is aligned to its element size. */
    public byte[] toBytes() {
        List<Tensor> ordered = new ArrayList<>(tensors.values());
        ordered.sort(Comparator.comparingInt((Tensor t) -> -t.dtype().byteSize()));
        Map<String, Object> root = new LinkedHashMap<>();
        if (!metadata.isEmpty()) {
            root.put(METADATA, metadata);
        }
        long offset = 0;
        for (Tensor t : ordered) {
            long bytes = t.data().remaining();
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("dtype", t.dtype().name());
            entry.put("shape", t.shape());
            entry.put("data_offsets", new long[] {offset, offset + bytes});
            root.put(t.name(), entry);
            offset += bytes;
        }
        byte[] header = HeaderJson.write(root).getBytes(StandardCharsets.UTF_8);
        int padded = (header.length + 7) / 8 * 8;
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(8 + padded + offset)).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded).put(header);
        for (int i = header.length; i < padded; i++) {
            out.put((byte) ' ');
        }
        for (Tensor t : ordered) {
            out.put(t.data());
        }
        return out.array();
    }

    /** Writes atomically: to a temporary file beside {@code file}, then moved over it. */
    public void write(Path file) throws IOException {
        writeAtomically(file, toBytes());
    }

    /** Writes {@code bytes} to {@code file} so that a crash leaves either the old file or the new one, whole. */
    public static void writeAtomically(Path file, byte[] bytes) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                while (b.hasRemaining()) {
                    ch.write(b);
                }
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Builder for a file to write. */
    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        private final Map<String, String> metadata = new LinkedHashMap<>();
        private final Map<String, Tensor> tensors = new LinkedHashMap<>();

        public Builder meta(String key, String value) {
            metadata.put(key, value);
            return this;
        }

        public Builder metadata(Map<String, String> values) {
            metadata.putAll(values);
            return this;
        }

        /** Adds a tensor; a second tensor with the same name is an error. */
        public Builder put(Tensor t) {
            if (tensors.putIfAbsent(t.name(), t) != null) {
                throw new IllegalArgumentException("duplicate tensor name '" + t.name() + "'");
            }
            return this;
        }

        public SafeTensors build() {
            return new SafeTensors(metadata, tensors);
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer dst, long position) throws IOException {
        long pos = position;
        while (dst.hasRemaining()) {
            int n = ch.read(dst, pos);
            if (n < 0) {
                throw new SafeTensorsException("unexpected end of file at byte " + pos);
            }
            pos += n;
        }
    }
}
