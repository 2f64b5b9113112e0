package io.kdapack.core.model;

import io.kdapack.core.linalg.Workspace;
import io.kdapack.core.nn.Parallel;

/** Element-wise helpers of the model code, parallel over fixed blocks (results do not depend on threads). */
final class Tensors {
    /** Elements per task of {@link #sum}, as {@link Parallel#addInto}. */
    private static final int SUM_BLOCK = 4096;
    private Tensors() {
    }

    /** {@code a + b} as a new array, in parallel blocks (no copy of {@code a} on the calling thread first). */
    static float[] sum(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("sum: lengths " + a.length + " and " + b.length + " differ");
        }
        float[] out = Workspace.floats(a.length); // written whole below
        Parallel.forBlocks(a.length, SUM_BLOCK, (from, to) -> {
            for (int i = from; i < to; i++) {
                out[i] = a[i] + b[i];
            }
        });
        return out;
    }

    /** Rows {@code [a_t | b_t]} of {@code a [T,n]} and {@code b [T,m]} as {@code [T,n+m]}. */
    static float[] concatRows(float[] a, int n, float[] b, int m, int rows) {
        float[] out = Workspace.floats(rows * (n + m)); // written whole below
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
        float[] out = Workspace.floats(rows * width); // written whole below
        Parallel.forBlocks(rows, 256, (r0, r1) -> {
            for (int t = r0; t < r1; t++) {
                System.arraycopy(x, t * stride + from, out, t * width, width);
            }
        });
        return out;
    }
}
