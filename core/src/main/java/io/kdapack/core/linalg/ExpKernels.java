package io.kdapack.core.linalg;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * A float {@code exp} and the element-wise passes built on it (sigmoid, SiLU, SwiGLU), vectorised with the Vector
 * API. The vector lanes and the scalar tail run the same sequence of IEEE operations (multiplies, adds, fused
 * multiply-adds, a division, bit shifts), each exactly rounded, so results are bitwise the same whether the code
 * runs compiled, interpreted, vectorised or not, and whatever the array offset — which resumed training relies on.
 *
 * <p>{@code exp(x) = 2ⁿ · exp(r)} with {@code n = round(x·log₂e)} and {@code r = x − n·ln2} (in two parts), and
 * {@code exp(r)} a degree-6 polynomial (Cephes' expf coefficients); relative error about 2 ulp. Inputs are
 * clamped to {@code [−87, 88]}, so underflow gives {@code ~1.6e-38} instead of 0 and overflow {@code ~1.7e38}
 * instead of infinity.
 */
public final class ExpKernels {
    private static final VectorSpecies<Float> SPECIES = VectorWidth.SPECIES;
    private static final int LANES = SPECIES.length();
    private static final float LO = -87f;
    private static final float HI = 88f;
    private static final float LOG2E = 1.44269504088896341f;
    /** 1.5·2²³: adding it rounds a float of magnitude below 2²² to an integer, held in the low mantissa bits. */
    private static final float ROUNDER = 12582912f;
    private static final int ROUNDER_BITS = 0x4B400000;
    private static final float LN2_HI = 0.693359375f;
    private static final float LN2_LO = -2.12194440e-4f;
    private static final float P0 = 1.9875691500e-4f;
    private static final float P1 = 1.3981999507e-3f;
    private static final float P2 = 8.3334519073e-3f;
    private static final float P3 = 4.1665795894e-2f;
    private static final float P4 = 1.6666665459e-1f;
    private static final float P5 = 5.0000001201e-1f;

    private ExpKernels() {
    }

    /** {@code exp(x)} (see the class comment for accuracy and range). */
    public static float exp(float x) {
        x = Math.min(Math.max(x, LO), HI);
        float t = Math.fma(x, LOG2E, ROUNDER);
        float n = t - ROUNDER;
        float r = Math.fma(n, -LN2_HI, x);
        r = Math.fma(n, -LN2_LO, r);
        float p = Math.fma(P0, r, P1);
        p = Math.fma(p, r, P2);
        p = Math.fma(p, r, P3);
        p = Math.fma(p, r, P4);
        p = Math.fma(p, r, P5);
        float y = Math.fma(p, r * r, r) + 1f;
        float scale = Float.intBitsToFloat((Float.floatToRawIntBits(t) - ROUNDER_BITS + 127) << 23);
        return y * scale;
    }

    /** Lane-wise {@link #exp(float)}. */
    public static FloatVector exp(FloatVector x) {
        x = x.max(LO).min(HI);
        FloatVector t = x.fma(LOG2E, ROUNDER);
        FloatVector n = t.sub(ROUNDER);
        FloatVector r = n.fma(FloatVector.broadcast(SPECIES, -LN2_HI), x);
        r = n.fma(FloatVector.broadcast(SPECIES, -LN2_LO), r);
        FloatVector p = FloatVector.broadcast(SPECIES, P0).fma(r, FloatVector.broadcast(SPECIES, P1));
        p = p.fma(r, FloatVector.broadcast(SPECIES, P2));
        p = p.fma(r, FloatVector.broadcast(SPECIES, P3));
        p = p.fma(r, FloatVector.broadcast(SPECIES, P4));
        p = p.fma(r, FloatVector.broadcast(SPECIES, P5));
        FloatVector y = p.fma(r.mul(r), r).add(1f);
        IntVector bits = t.reinterpretAsInts().sub(ROUNDER_BITS - 127).lanewise(VectorOperators.LSHL, 23);
        return y.mul(bits.reinterpretAsFloats());
    }

    /** {@code 1 / (1 + exp(−z))}. */
    public static float sigmoid(float z) {
        return 1f / (1f + exp(-z));
    }

    /** Lane-wise {@link #sigmoid(float)}. */
    public static FloatVector sigmoid(FloatVector z) {
        return FloatVector.broadcast(SPECIES, 1f).div(exp(z.neg()).add(1f));
    }

    /** {@code dst[i] = exp(src[i])} for {@code i < length} (offsets added). */
    public static void exp(float[] src, int srcOffset, float[] dst, int dstOffset, int length) {
        int i = 0;
        for (; i <= length - LANES; i += LANES) {
            exp(FloatVector.fromArray(SPECIES, src, srcOffset + i)).intoArray(dst, dstOffset + i);
        }
        for (; i < length; i++) {
            dst[dstOffset + i] = exp(src[srcOffset + i]);
        }
    }

    /** SiLU {@code dst[i] = z[i] · sigmoid(z[i])} for {@code i < length}. */
    public static void silu(float[] z, int zOffset, float[] dst, int dstOffset, int length) {
        int i = 0;
        for (; i <= length - LANES; i += LANES) {
            FloatVector v = FloatVector.fromArray(SPECIES, z, zOffset + i);
            v.mul(sigmoid(v)).intoArray(dst, dstOffset + i);
        }
        for (; i < length; i++) {
            float v = z[zOffset + i];
            dst[dstOffset + i] = v * sigmoid(v);
        }
    }

    /** {@code dst[i] = dy[i] · silu'(z[i])} with {@code silu'(z) = σ(z)·(1 + z·(1 − σ(z)))}, for {@code i < length}. */
    public static void siluBackward(float[] z, int zOffset, float[] dy, int dyOffset, float[] dst, int dstOffset,
                                    int length) {
        int i = 0;
        for (; i <= length - LANES; i += LANES) {
            FloatVector v = FloatVector.fromArray(SPECIES, z, zOffset + i);
            FloatVector s = sigmoid(v);
            FloatVector derivative = s.mul(v.mul(s.neg().add(1f)).add(1f));
            FloatVector.fromArray(SPECIES, dy, dyOffset + i).mul(derivative).intoArray(dst, dstOffset + i);
        }
        for (; i < length; i++) {
            float v = z[zOffset + i];
            float s = sigmoid(v);
            dst[dstOffset + i] = dy[dyOffset + i] * (s * (1f + v * (1f - s)));
        }
    }
}
