package io.kdapack.gpu;

/** bfloat16 as raw 16-bit values (the kernels' {@code bf16_t}): round to nearest even, NaN kept. */
public final class Bf16 {

    private Bf16() {
    }

    public static short fromFloat(float f) {
        int u = Float.floatToRawIntBits(f);
        if ((u & 0x7f800000) == 0x7f800000 && (u & 0x007fffff) != 0) {
            return (short) ((u >>> 16) | 0x40);
        }
        u += 0x7fff + ((u >>> 16) & 1);
        return (short) (u >>> 16);
    }

    public static float toFloat(short b) {
        return Float.intBitsToFloat((b & 0xffff) << 16);
    }

    public static short[] fromFloats(float[] values) {
        short[] out = new short[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = fromFloat(values[i]);
        }
        return out;
    }

    public static float[] toFloats(short[] values) {
        float[] out = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = toFloat(values[i]);
        }
        return out;
    }
}
