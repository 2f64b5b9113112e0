package io.kdapack.core.kda;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Small dense kernels of the chunked KDA on row-major float arrays with offsets, written with the Vector
 * API: each loop is a vector body followed by a scalar tail, so any length ≥ 0 works. Single-threaded;
 * the caller parallelises over heads.
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
        float sum = acc.reduceLanes(VectorOperators.ADD);
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
            FloatVector.fromArray(SPECIES, x, xOff + i).lanewise(VectorOperators.EXP).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = (float) Math.exp(x[xOff + i]);
        }
    }

    /** {@code C[m,n] += alpha · A[m,p] · B[p,n]}, all row-major and dense. */
    static void mulAdd(int m, int p, int n, float alpha, float[] a, int aOff, float[] b, int bOff,
                       float[] c, int cOff) {
        for (int i = 0; i < m; i++) {
            for (int l = 0; l < p; l++) {
                float s = alpha * a[aOff + i * p + l];
                if (s != 0f) {
                    axpy(n, s, b, bOff + l * n, c, cOff + i * n);
                }
            }
        }
    }

    /** {@code C[m,n] += alpha · A[m,p] · B[n,p]ᵀ}. */
    static void mulTransBAdd(int m, int p, int n, float alpha, float[] a, int aOff, float[] b, int bOff,
                             float[] c, int cOff) {
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                c[cOff + i * n + j] += alpha * dot(p, a, aOff + i * p, b, bOff + j * p);
            }
        }
    }

    /** {@code C[m,n] += alpha · A[p,m]ᵀ · B[p,n]}. */
    static void mulTransAAdd(int m, int p, int n, float alpha, float[] a, int aOff, float[] b, int bOff,
                             float[] c, int cOff) {
        for (int l = 0; l < p; l++) {
            for (int i = 0; i < m; i++) {
                float s = alpha * a[aOff + l * m + i];
                if (s != 0f) {
                    axpy(n, s, b, bOff + l * n, c, cOff + i * n);
                }
            }
        }
    }
}
