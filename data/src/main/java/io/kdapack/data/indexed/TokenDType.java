package io.kdapack.data.indexed;

import java.util.Arrays;

/**
 * Element types of a Megatron {@code .bin} file with their {@code .idx} dtype codes (numpy's names).
 * Token ids are exchanged as Java {@code int}; {@link #minValue()}/{@link #maxValue()} bound what a type can store.
 */
public enum TokenDType {
    UINT8(1, 1, 0, 255),
    INT8(2, 1, Byte.MIN_VALUE, Byte.MAX_VALUE),
    INT16(3, 2, Short.MIN_VALUE, Short.MAX_VALUE),
    INT32(4, 4, Integer.MIN_VALUE, Integer.MAX_VALUE),
    INT64(5, 8, Long.MIN_VALUE, Long.MAX_VALUE),
    FLOAT64(6, 8, -(1L << 53), 1L << 53),
    FLOAT32(7, 4, -(1L << 24), 1L << 24),
    UINT16(8, 2, 0, 65535);

    private final int code;
    private final int byteSize;
    private final long minValue;
    private final long maxValue;

    TokenDType(int code, int byteSize, long minValue, long maxValue) {
        this.code = code;
        this.byteSize = byteSize;
        this.minValue = minValue;
        this.maxValue = maxValue;
    }

    /** The code stored at byte 17 of an {@code .idx} file. */
    public int code() {
        return code;
    }

    /** Bytes per element in the {@code .bin} file. */
    public int byteSize() {
        return byteSize;
    }

    /** Smallest integer the type stores exactly. */
    public long minValue() {
        return minValue;
    }

    /** Largest integer the type stores exactly. */
    public long maxValue() {
        return maxValue;
    }

    /** The type with {@code code}, or {@code null} when no type has it. */
    public static TokenDType ofCode(int code) {
        for (TokenDType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        return null;
    }

    /** A type by its numpy name ({@code uint16}, {@code int32}, …); names the accepted spellings when unknown. */
    public static TokenDType parse(String name) {
        for (TokenDType t : values()) {
            if (t.name().equalsIgnoreCase(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown token dtype '" + name + "' (expected one of "
                + Arrays.toString(values()).toLowerCase(java.util.Locale.ROOT) + ")");
    }

    /**
     * The type Megatron's {@code preprocess_data.py} picks for a vocabulary: uint16 below 65500 ids, else int32.
     */
    public static TokenDType forVocabulary(int vocabSize) {
        if (vocabSize <= 0) {
            throw new IllegalArgumentException("vocabSize must be positive, got " + vocabSize);
        }
        return vocabSize < 65500 ? UINT16 : INT32;
    }

    /** Whether {@code value} can be stored exactly. */
    public boolean holds(long value) {
        return value >= minValue && value <= maxValue;
    }
}
