package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/**
 * Each element of ChunkMath's results has one value whether the vector body or the scalar tail computes it, which
 * is what makes the kernels independent of the vector width (the width only moves the border between the two):
 * every element is compared bit for bit with the scalar formula, at every length and offset.
 */
class ChunkMathTest {

    private static float[] normal(Random random, int n, float scale) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = scale * (float) random.nextGaussian();
        }
        return x;
    }

    private static void assertBits(float expected, float actual, String what) {
        assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(actual), what + ": " + actual + " vs "
                + expected);
    }

    @Test
    void vectorAndScalarExpAgreeBitwise() {
        Random random = new Random(31);
        float[] x = new float[4096 + 7];
        for (int i = 0; i < x.length; i++) {
            x[i] = (random.nextFloat() - 0.9f) * 110f; // [−99, 11]: below the floor, decays, and the factors > 1
        }
        x[0] = -0f;
        x[1] = -88f;
        x[2] = -87.5f;
        x[3] = Float.NEGATIVE_INFINITY;
        x[4] = -1000f;
        int lanes = ChunkMath.SPECIES.length();
        for (int i = 0; i + lanes <= x.length; i += lanes) {
            FloatVector v = ChunkMath.exp(FloatVector.fromArray(ChunkMath.SPECIES, x, i));
            for (int lane = 0; lane < lanes; lane++) {
                assertBits(ChunkMath.exp(x[i + lane]), v.lane(lane), "exp(" + x[i + lane] + ")");
            }
        }
        float[] out = new float[x.length];
        ChunkMath.exp(x.length, x, 0, out, 0);
        for (int i = 0; i < x.length; i++) {
            assertBits(ChunkMath.exp(x[i]), out[i], "exp array at " + i);
        }
    }

    @Test
    void elementwiseKernelsGiveTheScalarFormulaInBodyAndTail() {
        Random random = new Random(32);
        float[] x = normal(random, 80, 1f);
        float[] y = normal(random, 80, 1f);
        float[] start = normal(random, 80, 1f);
        float a = 0.7f;
        for (int n = 0; n <= 70; n++) {
            for (int offset = 0; offset < 3; offset++) {
                float[] axpy = start.clone();
                float[] multiplyAdd = start.clone();
                float[] multiply = new float[80];
                float[] scaled = new float[80];
                ChunkMath.axpy(n, a, x, offset, axpy, 1);
                ChunkMath.multiplyAdd(n, x, offset, y, 2, multiplyAdd, 1);
                ChunkMath.multiply(n, x, offset, y, 2, multiply, 1);
                ChunkMath.scale(n, a, x, offset, scaled, 1);
                for (int i = 0; i < n; i++) {
                    String at = "n=" + n + " offset=" + offset + " i=" + i;
                    assertBits(Math.fma(x[offset + i], a, start[1 + i]), axpy[1 + i], "axpy " + at);
                    assertBits(Math.fma(x[offset + i], y[2 + i], start[1 + i]), multiplyAdd[1 + i], "multiplyAdd " + at);
                    assertBits(x[offset + i] * y[2 + i], multiply[1 + i], "multiply " + at);
                    assertBits(a * x[offset + i], scaled[1 + i], "scale " + at);
                }
            }
        }
    }

    /**
     * Every element of a product is {@code alpha · (fused multiply-add chain over the depth, in order)}, then
     * {@code + beta · C}, whichever register tile, single-vector column or scalar column computes it; the triangular
     * structures, block diagonal by document or not, skip only stored zeros.
     */
    @Test
    void productsAccumulateEveryElementInDepthOrder() {
        Random random = new Random(33);
        // m covers every row tiling: 6-row tiles then a tile of 4 (64), 3 (9, 15), 2 (8), 4 and a single row (23, 5),
        // a single row (7, 13, 1); n every run of stripes: wide (64 with 16-float vectors), narrow (32, 45), both
        // (111, 96), then single vectors and scalar columns.
        int[][] shapes = {{64, 64, 64}, {7, 45, 13}, {13, 7, 64}, {64, 37, 19}, {1, 1, 1}, {23, 71, 23}, {9, 64, 9},
            {8, 33, 8}, {5, 40, 5}, {2, 64, 17}, {3, 32, 3}, {15, 111, 15}, {9, 96, 9}};
        for (int[] s : shapes) {
            int m = s[0];
            int n = s[1];
            int k = s[2];
            // Documents of the rows for the block-diagonal triangles: cuts at a third and at a half of m.
            int[] rowStart = new int[m];
            int[] rowEnd = new int[m];
            for (int i = 0; i < m; i++) {
                rowStart[i] = i < m / 3 ? 0 : i < m / 2 ? m / 3 : m / 2;
                rowEnd[i] = i < m / 3 ? m / 3 : i < m / 2 ? m / 2 : m;
            }
            ChunkMath.Structure lowerByDoc = ChunkMath.Structure.lowerA(rowStart);
            ChunkMath.Structure upperByDoc = ChunkMath.Structure.upperA(rowEnd);
            for (ChunkMath.Structure structure : List.of(ChunkMath.Structure.FULL, ChunkMath.Structure.LOWER_A,
                    ChunkMath.Structure.UPPER_A, ChunkMath.Structure.LOWER_C, lowerByDoc, upperByDoc)) {
                boolean lower = structure == ChunkMath.Structure.LOWER_A || structure == lowerByDoc;
                boolean upper = structure == ChunkMath.Structure.UPPER_A || structure == upperByDoc;
                for (boolean transA : new boolean[] {false, true}) {
                    if ((lower || upper) && m != k) {
                        continue;
                    }
                    float[] a = normal(random, m * k, 1f);
                    for (int i = 0; i < m; i++) {
                        for (int p = 0; p < k; p++) {
                            boolean zero = lower ? p > i || (structure == lowerByDoc && p < rowStart[i])
                                    : upper && (p < i || (structure == upperByDoc && p >= rowEnd[i]));
                            if (zero) {
                                a[transA ? p * m + i : i * k + p] = 0f;
                            }
                        }
                    }
                    float[] b = normal(random, k * n, 1f);
                    float[] c0 = normal(random, m * n, 1f);
                    for (float beta : new float[] {0f, 1f}) {
                        float[] c = c0.clone();
                        ChunkMath.matmul(structure, transA, m, n, k, -0.5f, a, 0, transA ? m : k, b, 0, n, beta, c, 0,
                                n);
                        for (int i = 0; i < m; i++) {
                            for (int j = 0; j < n; j++) {
                                if (structure == ChunkMath.Structure.LOWER_C && j > i) {
                                    continue;
                                }
                                float acc = 0f;
                                for (int p = 0; p < k; p++) {
                                    acc = Math.fma(a[transA ? p * m + i : i * k + p], b[p * n + j], acc);
                                }
                                float expected = beta == 0f ? -0.5f * acc : Math.fma(beta, c0[i * n + j], -0.5f * acc);
                                assertBits(expected, c[i * n + j], structure + (transA ? " transA " : " ") + m + "x" + n
                                        + "x" + k + " beta " + beta + " at " + i + "," + j);
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * A product with B packed once ({@link ChunkMath#pack}, or {@link ChunkMath#packTransposed} from Bᵀ) gives every
     * element the chain of the product on B as stored, bit for bit, and {@code columnDotsInto} accumulates
     * {@code B[p,i]·B'[p,i]} over p in order; both at widths with and without a stripe remainder.
     */
    @Test
    void packedProductsAreTheProductsOnBAsStored() {
        Random random = new Random(34);
        // n = 64, 45, 32 and 100 reuse the same panels at other widths (wide, narrow, both with 16-float vectors).
        int[][] shapes = {{64, 64, 64}, {5, 64, 64}, {9, 20, 12}, {1, 7, 48}, {32, 45, 33}, {13, 64, 1}, {7, 100, 20},
            {3, 32, 64}};
        ChunkMath.Packed packed = new ChunkMath.Packed(64, 128);
        ChunkMath.Packed transposed = new ChunkMath.Packed(64, 128);
        for (int[] s : shapes) {
            int m = s[0];
            int n = s[1];
            int k = s[2];
            float[] b = normal(random, k * n, 1f);
            float[] bt = new float[n * k];
            for (int p = 0; p < k; p++) {
                for (int j = 0; j < n; j++) {
                    bt[j * k + p] = b[p * n + j];
                }
            }
            ChunkMath.pack(k, n, b, 0, n, packed);
            ChunkMath.packTransposed(k, n, bt, 0, k, transposed);
            for (boolean transA : new boolean[] {false, true}) {
                float[] a = normal(random, m * k, 1f);
                float[] c0 = normal(random, m * n, 1f);
                for (float beta : new float[] {0f, 1f}) {
                    float[] expected = c0.clone();
                    ChunkMath.matmul(transA, m, n, k, -0.5f, a, 0, transA ? m : k, b, 0, n, beta, expected, 0, n);
                    for (ChunkMath.Packed from : new ChunkMath.Packed[] {packed, transposed}) {
                        float[] c = c0.clone();
                        ChunkMath.matmul(transA, m, -0.5f, a, 0, transA ? m : k, from, beta, c, 0, n);
                        for (int i = 0; i < m * n; i++) {
                            assertBits(expected[i], c[i], (from == packed ? "packed " : "packed transposed ") + m + "x"
                                    + n + "x" + k + (transA ? " transA" : "") + " beta " + beta + " at " + i);
                        }
                    }
                }
            }
            float[] dots = normal(random, n, 1f);
            float[] expected = dots.clone();
            for (int j = 0; j < n; j++) {
                for (int p = 0; p < k; p++) {
                    expected[j] = Math.fma(b[p * n + j], b[p * n + j], expected[j]);
                }
            }
            packed.columnDotsInto(transposed, dots);
            for (int j = 0; j < n; j++) {
                assertBits(expected[j], dots[j], "column dots " + k + "x" + n + " at " + j);
            }
        }
    }
}
