package io.kdapack.core.kda;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Small dense kernels of the chunked KDA on row-major float arrays with offsets, written with the Vector
 * API: each loop is a vector body followed by a scalar tail, so any length ≥ 0 works. Single-threaded;
 * the caller parallelises over heads.
 *
 * <p>Bitwise reproducible: only operations with one correctly rounded IEEE result are used (add, mul,
 * fma, exact conversions). The Vector API's {@code EXP} and {@code reduceLanes(ADD)} are avoided on
 * purpose: their compiled and interpreted forms round differently or sum in another order, so results
 * would change while the JIT warms up.
 */
final class ChunkMath {

    static final VectorSpecies<Float> SPECIES = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = SPECIES.length();

    private ChunkMath() {
    }

    /** {@code y[yOff …+n] += a · x[xOff …+n]}. */
    static void axpy(int n, float a, float[] x, int xOff, float[] y, int yOff) {
        int i = 0;
        FloatVector av = FloatVector.broadcast(SPECIES, a);
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector yv = FloatVector.fromArray(SPECIES, y, yOff + i);
            FloatVector.fromArray(SPECIES, x, xOff + i).fma(av, yv).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }

    /** {@code Σ x[xOff+i]·y[yOff+i]} over {@code n} entries. */
    static float dot(int n, float[] x, int xOff, float[] y, int yOff) {
        int i = 0;
        FloatVector acc = FloatVector.zero(SPECIES);
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            acc = FloatVector.fromArray(SPECIES, x, xOff + i).fma(FloatVector.fromArray(SPECIES, y, yOff + i), acc);
        }
        float sum = sumLanes(acc);
        for (; i < n; i++) {
            sum += x[xOff + i] * y[yOff + i];
        }
        return sum;
    }

    /** {@code out[i] = x[i] · y[i]} over {@code n} entries. */
    static void multiply(int n, float[] x, int xOff, float[] y, int yOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector.fromArray(SPECIES, x, xOff + i).mul(FloatVector.fromArray(SPECIES, y, yOff + i))
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = x[xOff + i] * y[yOff + i];
        }
    }

    /** {@code out[i] += x[i] · y[i]} over {@code n} entries. */
    static void multiplyAdd(int n, float[] x, int xOff, float[] y, int yOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            FloatVector o = FloatVector.fromArray(SPECIES, out, outOff + i);
            FloatVector.fromArray(SPECIES, x, xOff + i).fma(FloatVector.fromArray(SPECIES, y, yOff + i), o)
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] += x[xOff + i] * y[yOff + i];
        }
    }

    /** {@code out[i] = exp(x[i])} over {@code n} entries. */
    static void exp(int n, float[] x, int xOff, float[] out, int outOff) {
        int i = 0;
        for (int bound = SPECIES.loopBound(n); i < bound; i += LANES) {
            exp(FloatVector.fromArray(SPECIES, x, xOff + i)).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = (float) Math.exp(x[xOff + i]);
        }
    }

    /** Lanes summed in lane order (deterministic, unlike {@code reduceLanes}). */
    static float sumLanes(FloatVector v) {
        float sum = 0f;
        for (int i = 0; i < LANES; i++) {
            sum += v.lane(i);
        }
        return sum;
    }

    /**
     * {@code exp(x)} per lane for {@code x ≤ 0} (the only arguments the chunked form produces), relative
     * error a few ulp: {@code x = n·ln2 + r} with {@code |r| ≤ ln2/2}, a degree-7 Taylor polynomial in
     * {@code r} (truncation error below 1e-8), times {@code 2^n} built in the exponent bits. Below −87
     * (where exp leaves the normal float range) the result is 0.
     */
    static FloatVector exp(FloatVector x) {
        FloatVector shifter = FloatVector.broadcast(SPECIES, ROUNDING_SHIFTER);
        FloatVector clamped = x.max(EXP_FLOOR);
        FloatVector shifted = clamped.fma(FloatVector.broadcast(SPECIES, LOG2_E), shifter);
        FloatVector n = shifted.sub(shifter);
        FloatVector r = n.fma(FloatVector.broadcast(SPECIES, -LN2_HI), clamped);
        r = n.fma(FloatVector.broadcast(SPECIES, -LN2_LO), r);
        FloatVector p = FloatVector.broadcast(SPECIES, 1f / 5040f);
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 720f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 120f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 24f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 6f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 0.5f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f));
        IntVector exponent = ((IntVector) n.convert(VectorOperators.F2I, 0)).add(127).lanewise(VectorOperators.LSHL, 23);
        FloatVector result = p.mul(exponent.reinterpretAsFloats());
        return result.blend(0f, x.compare(VectorOperators.LT, EXP_FLOOR));
    }

    private static final float ROUNDING_SHIFTER = 12582912f; // 1.5·2^23: adding it rounds to an integer
    private static final float LOG2_E = 1.44269504f;
    private static final float LN2_HI = 0.693145752f; // ln 2 split so that n·LN2_HI is exact
    private static final float LN2_LO = 1.42860677e-6f;
    private static final float EXP_FLOOR = -87f;
}
