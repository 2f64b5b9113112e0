package io.kdapack.data.npy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An integer array in numpy's {@code .npy} format (versions 1, 2 and 3), as Megatron caches its dataset indices:
 * magic {@code \x93NUMPY}, major and minor version bytes, a little-endian header length (u16 in version 1, u32 after),
 * then a Python dict literal {@code {'descr': '<i4', 'fortran_order': False, 'shape': (N, 2), }} and the raw data.
 *
 * <p>Element types: signed and unsigned integers of 1, 2, 4 and 8 bytes in either byte order ({@code <i4}, {@code <u4},
 * {@code <i8}, … — Megatron writes int32 document and sample indices, uint32 or int64 shuffle indices and int64 sample
 * indices for very large datasets). Fortran order is accepted only where it changes nothing (rank ≤ 1).
 *
 * @param source where the array came from, for messages
 * @param descr  numpy's type string, e.g. {@code <i4}
 * @param shape  dimensions, row-major
 * @param data   the raw elements in {@link #order()}
 */
public record NpyArray(String source, String descr, long[] shape, ByteBuffer data) {
    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final Pattern DESCR = Pattern.compile("['\"]descr['\"]\\s*:\\s*['\"]([^'\"]*)['\"]");
    private static final Pattern FORTRAN = Pattern.compile("['\"]fortran_order['\"]\\s*:\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("['\"]shape['\"]\\s*:\\s*\\(([^)]*)\\)");
    private static final Pattern TYPE = Pattern.compile("([<>|=])([iu])([1248])");

    public NpyArray {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** Reads {@code file}; everything a corrupt or foreign file can get wrong ends in {@link NpyFormatException}. */
    public static NpyArray read(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size > Integer.MAX_VALUE) {
                throw new NpyFormatException(file + ": file length: " + size + " bytes, at most 2 GiB supported");
            }
            ByteBuffer bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
            return parse(file.toString(), bytes);
        }
    }

    /** Parses an array from {@code bytes} (position 0 to limit); {@code source} names it in messages. */
    public static NpyArray parse(String source, ByteBuffer bytes) throws NpyFormatException {
        ByteBuffer b = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.limit() < 10) {
            throw new NpyFormatException(source + ": header: expected at least 10 bytes, found " + b.limit());
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (b.get(i) != MAGIC[i]) {
                throw new NpyFormatException(source + ": magic: expected \\x93NUMPY, found bytes "
                        + Arrays.toString(Arrays.copyOf(toArray(b, 0, 6), 6)) + " (not a .npy file)");
            }
        }
        int major = b.get(6);
        int headerLength;
        int headerStart;
        switch (major) {
            case 1 -> {
                headerLength = Short.toUnsignedInt(b.getShort(8));
                headerStart = 10;
            }
            case 2, 3 -> {
                if (b.limit() < 12) {
                    throw new NpyFormatException(source + ": header: expected at least 12 bytes, found " + b.limit());
                }
                long length = Integer.toUnsignedLong(b.getInt(8));
                if (length > b.limit() - 12) {
                    throw new NpyFormatException(source + ": header length: " + length + " exceeds the file ("
                            + b.limit() + " bytes)");
                }
                headerLength = (int) length;
                headerStart = 12;
            }
            default -> throw new NpyFormatException(source + ": version: expected 1, 2 or 3, found " + major + "."
                    + b.get(7));
        }
        if (headerLength > b.limit() - headerStart) {
            throw new NpyFormatException(source + ": header length: " + headerLength + " exceeds the file ("
                    + b.limit() + " bytes)");
        }
        String header = new String(toArray(b, headerStart, headerLength),
                major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        String descr = field(source, header, DESCR, "descr");
        boolean fortran = field(source, header, FORTRAN, "fortran_order").equals("True");
        long[] shape = shape(source, field(source, header, SHAPE, "shape"));
        Matcher type = TYPE.matcher(descr);
        if (!type.matches()) {
            throw new NpyFormatException(source + ": descr: expected an integer type such as '<i4', '<u4' or '<i8', "
                    + "found '" + descr + "'");
        }
        if (fortran && shape.length > 1) {
            throw new NpyFormatException(source + ": fortran_order: expected False for a " + shape.length
                    + "-dimensional array, found True");
        }
        int elementSize = Integer.parseInt(type.group(3));
        long elements = 1;
        for (long d : shape) {
            if (d != 0 && elements > Integer.MAX_VALUE / d) {
                throw new NpyFormatException(source + ": shape: " + Arrays.toString(shape) + " exceeds 2^31 elements");
            }
            elements *= d;
        }
        int dataStart = headerStart + headerLength;
        long expected = elements * elementSize;
        if (b.limit() - dataStart != expected) {
            throw new NpyFormatException(source + ": data: expected " + expected + " bytes for " + descr + " "
                    + Arrays.toString(shape) + ", found " + (b.limit() - dataStart));
        }
        ByteOrder order = type.group(1).equals(">") ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
        return new NpyArray(source, descr, shape, b.slice(dataStart, (int) expected).order(order));
    }

    /** Number of elements. */
    public int size() {
        return data.limit() / elementSize();
    }

    /** Byte order of {@link #data()}. */
    public ByteOrder order() {
        return descr.charAt(0) == '>' ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
    }

    /** Element {@code i} (row-major), exact for every type; uint64 above 2^63 is refused. */
    public long get(int i) {
        return get(data.duplicate().order(order()), i);
    }

    private long get(ByteBuffer b, int i) {
        int size = elementSize();
        boolean unsigned = descr.charAt(1) == 'u';
        long value = switch (size) {
            case 1 -> unsigned ? Byte.toUnsignedLong(b.get(i)) : b.get(i);
            case 2 -> unsigned ? Short.toUnsignedLong(b.getShort(2 * i)) : b.getShort(2 * i);
            case 4 -> unsigned ? Integer.toUnsignedLong(b.getInt(4 * i)) : b.getInt(4 * i);
            default -> b.getLong(8 * i);
        };
        if (size == 8 && unsigned && value < 0) {
            throw new IllegalArgumentException(source + ": element " + i + " = " + Long.toUnsignedString(value)
                    + " exceeds 2^63");
        }
        return value;
    }

    /** All elements as int (row-major); a value outside the int range is an error naming its index. */
    public int[] toIntArray() {
        int n = size();
        int[] out = new int[n];
        ByteBuffer b = data.duplicate().order(order());
        for (int i = 0; i < n; i++) {
            long v = get(b, i);
            if (v != (int) v) {
                throw new IllegalArgumentException(source + ": element " + i + " = " + v + " does not fit in int32");
            }
            out[i] = (int) v;
        }
        return out;
    }

    private int elementSize() {
        return descr.charAt(2) - '0';
    }

    private static String field(String source, String header, Pattern pattern, String name) throws NpyFormatException {
        Matcher m = pattern.matcher(header);
        if (!m.find()) {
            throw new NpyFormatException(source + ": header: expected a '" + name + "' entry, found " + header.strip());
        }
        return m.group(1);
    }

    private static long[] shape(String source, String tuple) throws NpyFormatException {
        String[] parts = tuple.split(",");
        int count = 0;
        long[] shape = new long[parts.length];
        for (String part : parts) {
            String p = part.strip();
            if (p.isEmpty()) {
                continue;
            }
            try {
                shape[count] = Long.parseLong(p.endsWith("L") ? p.substring(0, p.length() - 1) : p);
            } catch (NumberFormatException e) {
                throw new NpyFormatException(source + ": shape: expected integers, found (" + tuple + ")");
            }
            if (shape[count] < 0) {
                throw new NpyFormatException(source + ": shape: expected dimensions >= 0, found (" + tuple + ")");
            }
            count++;
        }
        return Arrays.copyOf(shape, count);
    }

    private static byte[] toArray(ByteBuffer b, int from, int length) {
        byte[] out = new byte[Math.min(length, b.limit() - from)];
        b.get(from, out);
        return out;
    }
}
