package io.kdapack.core.io;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * One named tensor of a safetensors file: dtype, row-major shape and the raw little-endian bytes.
 * The {@code to*Array} methods convert any numeric dtype; conversions that would lose integer values
 * (a float to an int array, an I64 beyond the int range) are refused with a message naming the tensor.
 */
public record Tensor(String name, DType dtype, long[] shape, ByteBuffer data) {

    public Tensor {
        long n = elementCount(shape);
        if (data.remaining() != n * dtype.byteSize()) {
            throw new IllegalArgumentException("tensor '" + name + "': " + data.remaining() + " bytes for shape "
                    + Arrays.toString(shape) + " of " + dtype + " (expected " + n * dtype.byteSize() + ")");
        }
        data = data.slice().order(ByteOrder.LITTLE_ENDIAN);
        shape = shape.clone();
    }

    public static Tensor of(String name, float[] values, long... shape) {
        ByteBuffer b = allocate(values.length, DType.F32, shape, name);
        b.asFloatBuffer().put(values);
        return new Tensor(name, DType.F32, shape, b);
    }

    public static Tensor of(String name, double[] values, long... shape) {
        ByteBuffer b = allocate(values.length, DType.F64, shape, name);
        b.asDoubleBuffer().put(values);
        return new Tensor(name, DType.F64, shape, b);
    }

    public static Tensor of(String name, int[] values, long... shape) {
        ByteBuffer b = allocate(values.length, DType.I32, shape, name);
        b.asIntBuffer().put(values);
        return new Tensor(name, DType.I32, shape, b);
    }

    public static Tensor of(String name, long[] values, long... shape) {
        ByteBuffer b = allocate(values.length, DType.I64, shape, name);
        b.asLongBuffer().put(values);
        return new Tensor(name, DType.I64, shape, b);
    }

    /** Stores float values as F64 (results) or F32 (inputs), as the golden files do. */
    public static Tensor ofFloats(String name, float[] values, DType dtype, long... shape) {
        return switch (dtype) {
            case F32 -> of(name, values, shape);
            case F64 -> {
                double[] d = new double[values.length];
                for (int i = 0; i < d.length; i++) {
                    d[i] = values[i];
                }
                yield of(name, d, shape);
            }
            default -> throw new IllegalArgumentException("output dtype must be F32 or F64, got " + dtype);
        };
    }

    private static ByteBuffer allocate(int length, DType dtype, long[] shape, String name) {
        if (elementCount(shape) != length) {
            throw new IllegalArgumentException("tensor '" + name + "': " + length + " values for shape "
                    + Arrays.toString(shape));
        }
        return ByteBuffer.allocate(length * dtype.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Product of the dimensions; a scalar (shape {@code []}) has one element. */
    public static long elementCount(long[] shape) {
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public int rank() {
        return shape.length;
    }

    public long dim(int axis) {
        return shape[axis];
    }

    public int size() {
        return Math.toIntExact(elementCount(shape));
    }

    /** Values as float; F64 is rounded to the nearest float. */
    public float[] toFloatArray() {
        int n = size();
        float[] out = new float[n];
        ByteBuffer b = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            out[i] = (float) getDouble(b, i);
        }
        return out;
    }

    /** Values as double, exactly for every dtype except I64/U64 beyond 2^53. */
    public double[] toDoubleArray() {
        int n = size();
        double[] out = new double[n];
        ByteBuffer b = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            out[i] = getDouble(b, i);
        }
        return out;
    }

    private double getDouble(ByteBuffer b, int i) {
        return switch (dtype) {
            case F64 -> b.getDouble(i * 8);
            case F32 -> b.getFloat(i * 4);
            case F16 -> Float.float16ToFloat(b.getShort(i * 2));
            case BF16 -> Float.intBitsToFloat((b.getShort(i * 2) & 0xFFFF) << 16);
            default -> getLong(b, i);
        };
    }

    /** Values of an integer tensor as int; refuses floats and values outside the int range. */
    public int[] toIntArray() {
        long[] l = toLongArray();
        int[] out = new int[l.length];
        for (int i = 0; i < l.length; i++) {
            if (l[i] != (int) l[i]) {
                throw new IllegalArgumentException("tensor '" + name + "': value " + l[i] + " at index " + i
                        + " does not fit in int32");
            }
            out[i] = (int) l[i];
        }
        return out;
    }

    /** Values of an integer tensor as long; refuses float dtypes. */
    public long[] toLongArray() {
        int n = size();
        long[] out = new long[n];
        ByteBuffer b = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            out[i] = getLong(b, i);
        }
        return out;
    }

    private long getLong(ByteBuffer b, int i) {
        return switch (dtype) {
            case I64, U64 -> b.getLong(i * 8);
            case I32 -> b.getInt(i * 4);
            case U32 -> Integer.toUnsignedLong(b.getInt(i * 4));
            case I16 -> b.getShort(i * 2);
            case U16 -> Short.toUnsignedInt(b.getShort(i * 2));
            case I8 -> b.get(i);
            case U8, BOOL -> Byte.toUnsignedInt(b.get(i));
            default -> throw new IllegalArgumentException("tensor '" + name + "' has dtype " + dtype
                    + ", expected an integer dtype");
        };
    }

    /** Raw little-endian bytes (a read-only view). */
    @Override
    public ByteBuffer data() {
        return data.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }
}
