package io.kdapack.core.io;

/** Element types of a safetensors file, with their size in bytes and header spelling. */
public enum DType {
    F64(8), F32(4), F16(2), BF16(2), I64(8), I32(4), I16(2), I8(1), U8(1), U16(2), U32(4), U64(8), BOOL(1);

    private final int byteSize;

    DType(int byteSize) {
        this.byteSize = byteSize;
    }

    /** Bytes per element. */
    public int byteSize() {
        return byteSize;
    }

    /** The dtype named {@code name} in a header; names the accepted spellings when unknown. */
    public static DType parse(String name) {
        for (DType t : values()) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown safetensors dtype '" + name + "' (expected one of "
                + java.util.Arrays.toString(values()) + ")");
    }
}
