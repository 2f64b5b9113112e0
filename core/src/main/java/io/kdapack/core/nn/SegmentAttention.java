package io.kdapack.core.nn;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.linalg.ExpKernels;
import io.kdapack.core.linalg.Gemm;

/**
 * Softmax attention with a block-diagonal causal mask: token {@code t} of a segment attends to the tokens of the
 * same segment at or before {@code t}; tokens in no segment (padding) attend to nothing and get a zero output.
 * {@code q, k [T,H,Dk]}, {@code v, o [T,H,Dv]} (token-major, heads contiguous within a token):
 * {@code o[t,h] = Σ_{s ∈ seg(t), s ≤ t} softmax_s(scale · q[t,h]·k[s,h]) · v[s,h]}.
 *
 * <p>Each (head, segment) pair is one parallel task; inside it the queries go in row blocks of {@link #ROW_BLOCK}
 * against the keys up to the block's end, so memory is {@code ROW_BLOCK × L} per task and the masked upper
 * triangle is mostly skipped. The backward pass recomputes the probabilities with the same code (bitwise equal)
 * instead of storing {@code L²} values, and accumulates {@code dk, dv} over row blocks in a fixed order.
 */
public final class SegmentAttention {
    private static final int ROW_BLOCK = 128;

    private final int heads;
    private final int keyDim;
    private final int valueDim;
    private final float scale;

    /** What backward needs: the inputs. */
    public record Saved(Segments segments, float[] q, float[] k, float[] v, float[] output) {
    }

    public record Gradients(float[] dq, float[] dk, float[] dv) {
    }

    public SegmentAttention(int heads, int keyDim, int valueDim, float scale) {
        this.heads = heads;
        this.keyDim = keyDim;
        this.valueDim = valueDim;
        this.scale = scale;
    }

    public Saved forward(Segments segments, float[] q, float[] k, float[] v) {
        Shapes.check("attention q", q, segments.tokens(), heads * keyDim);
        Shapes.check("attention k", k, segments.tokens(), heads * keyDim);
        Shapes.check("attention v", v, segments.tokens(), heads * valueDim);
        float[] o = new float[segments.tokens() * heads * valueDim];
        int vStride = heads * valueDim;
        Parallel.forEach(heads * segments.count(), task -> {
            int h = task % heads;
            int start = segments.start(task / heads);
            int length = segments.length(task / heads);
            float[] p = new float[Math.min(ROW_BLOCK, length) * length];
            for (int r0 = 0; r0 < length; r0 += ROW_BLOCK) {
                int rows = Math.min(ROW_BLOCK, length - r0);
                int cols = r0 + rows;
                probabilities(q, k, start, h, r0, rows, cols, p);
                Gemm.sgemm(false, false, rows, valueDim, cols, 1f, p, 0, cols, v, start * vStride + h * valueDim,
                        vStride, 0f, o, (start + r0) * vStride + h * valueDim, vStride);
            }
        });
        return new Saved(segments, q, k, v, o);
    }

    public Gradients backward(Saved saved, float[] dOutput) {
        Segments segments = saved.segments();
        Shapes.check("attention output gradient", dOutput, segments.tokens(), heads * valueDim);
        float[] q = saved.q();
        float[] k = saved.k();
        float[] v = saved.v();
        float[] dq = new float[q.length];
        float[] dk = new float[k.length];
        float[] dv = new float[v.length];
        int kStride = heads * keyDim;
        int vStride = heads * valueDim;
        Parallel.forEach(heads * segments.count(), task -> {
            int h = task % heads;
            int start = segments.start(task / heads);
            int length = segments.length(task / heads);
            int tile = Math.min(ROW_BLOCK, length) * length;
            float[] p = new float[tile];
            float[] ds = new float[tile];
            int kBase = start * kStride + h * keyDim;
            int vBase = start * vStride + h * valueDim;
            for (int r0 = 0; r0 < length; r0 += ROW_BLOCK) {
                int rows = Math.min(ROW_BLOCK, length - r0);
                int cols = r0 + rows;
                probabilities(q, k, start, h, r0, rows, cols, p);
                int qRows = kBase + r0 * kStride;
                int dOutRows = vBase + r0 * vStride;
                // dP = dO · Vᵀ, then dS = P ⊙ (dP − rowsum(P ⊙ dP)); masked entries have P = 0.
                Gemm.sgemm(false, true, rows, cols, valueDim, 1f, dOutput, dOutRows, vStride, v, vBase, vStride,
                        0f, ds, 0, cols);
                for (int i = 0; i < rows; i++) {
                    double rowDot = 0;
                    for (int j = 0; j < cols; j++) {
                        rowDot += (double) p[i * cols + j] * ds[i * cols + j];
                    }
                    for (int j = 0; j < cols; j++) {
                        ds[i * cols + j] = p[i * cols + j] * (ds[i * cols + j] - (float) rowDot);
                    }
                }
                Gemm.sgemm(false, false, rows, keyDim, cols, scale, ds, 0, cols, k, kBase, kStride, 0f, dq, qRows,
                        kStride);
                Gemm.sgemm(true, false, cols, keyDim, rows, scale, ds, 0, cols, q, qRows, kStride, 1f, dk, kBase,
                        kStride);
                Gemm.sgemm(true, false, cols, valueDim, rows, 1f, p, 0, cols, dOutput, dOutRows, vStride, 1f, dv,
                        vBase, vStride);
            }
        });
        return new Gradients(dq, dk, dv);
    }

    /**
     * {@code p[i, j] (rows × cols)} = causal softmax of {@code scale · q[r0+i]·k[j]} over {@code j ≤ r0+i}, 0 above;
     * positions relative to the segment start.
     */
    private void probabilities(float[] q, float[] k, int start, int h, int r0, int rows, int cols, float[] p) {
        int kStride = heads * keyDim;
        int base = start * kStride + h * keyDim;
        Gemm.sgemm(false, true, rows, cols, keyDim, scale, q, base + r0 * kStride, kStride, k, base, kStride, 0f, p, 0,
                cols);
        for (int i = 0; i < rows; i++) {
            int row = i * cols;
            int visible = r0 + i + 1;
            causalSoftmax(p, row, visible, cols);
        }
    }

    /**
     * Softmax over the first {@code visible} of the {@code cols} scores at {@code p[row …]}, 0 beyond: every score
     * less the row's maximum before {@code exp}, the sum in double. MLA's decode path uses the same arithmetic.
     */
    static void causalSoftmax(float[] p, int row, int visible, int cols) {
        float max = Float.NEGATIVE_INFINITY;
        for (int j = 0; j < visible; j++) {
            max = Math.max(max, p[row + j]);
        }
        for (int j = 0; j < visible; j++) {
            p[row + j] -= max;
        }
        ExpKernels.exp(p, row, p, row, visible);
        double sum = 0;
        for (int j = 0; j < visible; j++) {
            sum += p[row + j];
        }
        float inv = (float) (1.0 / sum);
        for (int j = 0; j < visible; j++) {
            p[row + j] *= inv;
        }
        java.util.Arrays.fill(p, row + visible, row + cols, 0f);
    }
}
