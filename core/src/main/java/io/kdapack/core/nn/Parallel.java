package io.kdapack.core.nn;

import io.kdapack.core.linalg.Gemm;
import io.kdapack.core.linalg.Team;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.function.IntConsumer;

/**
 * Where the layers run their parallel work: the fork-join pool of the calling task, or the common pool. Each
 * parallel task writes disjoint outputs in a fixed order, and {@link Gemm} accumulates in a fixed order, so results
 * are bitwise the same whatever the pool's size.
 */
public final class Parallel {

    private Parallel() {
    }

    public static ForkJoinPool pool() {
        ForkJoinPool current = ForkJoinTask.getPool();
        return current != null ? current : ForkJoinPool.commonPool();
    }

    /** Runs {@code body(i)} for {@code i < count}, in parallel; the bodies must write disjoint data. */
    public static void forEach(int count, IntConsumer body) {
        Team.forEach(count, body);
    }

    /** Runs {@code body(from, to)} over blocks of {@code [0, count)} of about {@code grain} indices, in parallel. */
    public static void forBlocks(int count, int grain, RangeBody body) {
        int blocks = (count + grain - 1) / grain;
        forEach(blocks, b -> body.run(b * grain, Math.min(count, (b + 1) * grain)));
    }

    /** {@code into += values} element-wise, same length, in parallel blocks (each sum is the same whatever the pool). */
    public static void addInto(float[] into, float[] values) {
        if (into.length != values.length) {
            throw new IllegalArgumentException("addInto: lengths " + into.length + " and " + values.length + " differ");
        }
        forBlocks(into.length, 4096, (from, to) -> {
            for (int i = from; i < to; i++) {
                into[i] += values[i];
            }
        });
    }

    public interface RangeBody {
        void run(int from, int to);
    }

    /** {@code C = alpha·op(A)·op(B) + beta·C}, rows of C split over the pool (see {@link Gemm#sgemm}). */
    public static void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                     float[] a, int aOffset, int lda, float[] b, int bOffset, int ldb,
                     float beta, float[] c, int cOffset, int ldc) {
        Gemm.parallelSgemm(pool(), transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset,
                ldc);
    }
}
