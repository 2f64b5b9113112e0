package io.kdapack.core.model;

import io.kdapack.core.nn.Parallel;

/** Element-wise helpers of the model code, parallel over fixed blocks (results do not depend on threads). */
final class Tensors {
    private static final int GRAIN = 4096;

    private Tensors() {
    }

    /** {@code into += values}, same length. */
    static void addInto(float[] into, float[] values) {
        if (into.length != values.length) {
            throw new IllegalArgumentException("addInto: lengths " + into.length + " and " + values.length + " differ");
        }
        Parallel.forBlocks(into.length, GRAIN, (from, to) -> {
            for (int i = from; i < to; i++) {
                into[i] += values[i];
            }
        });
    }

    /** {@code a + b} as a new array. */
    static float[] sum(float[] a, float[] b) {
        float[] out = a.clone();
        addInto(out, b);
        return out;
    }

    /** Rows {@code [a_t | b_t]} of {@code a [T,n]} and {@code b [T,m]} as {@code [T,n+m]}. */
    static float[] concatRows(float[] a, int n, float[] b, int m, int rows) {
        float[] out = new float[rows * (n + m)];
        Parallel.forBlocks(rows, 256, (from, to) -> {
            for (int t = from; t < to; t++) {
                System.arraycopy(a, t * n, out, t * (n + m), n);
                System.arraycopy(b, t * m, out, t * (n + m) + n, m);
            }
        });
        return out;
    }

    /** Columns {@code [from, from+width)} of {@code x [T,stride]} as {@code [T,width]}. */
    static float[] columns(float[] x, int stride, int from, int width, int rows) {
        float[] out = new float[rows * width];
        Parallel.forBlocks(rows, 256, (r0, r1) -> {
            for (int t = r0; t < r1; t++) {
                System.arraycopy(x, t * stride + from, out, t * width, width);
            }
        });
        return out;
    }
}
