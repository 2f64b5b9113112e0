package io.kdapack.data.segment;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import java.util.Arrays;

/**
 * Pure functions from a packed micro-batch to its document structure. A micro-batch is {@code [B,L]} row-major: B rows
 * of L positions, each row a packed sample whose first {@code realLengths[b]} positions are real tokens and the rest
 * padding. A new document starts after each EOD; the EOD belongs to the document it ends.
 *
 * <p>Segment ids are 1-based per row, padding 0. Segments never cross rows.
 */
public final class Segmenter {
    private Segmenter() {
    }

    /**
     * Segment ids {@code [B,L]} of {@code tokens [B,L]}.
     *
     * @param realLengths {@code [B]} real positions per row, or {@code null} when every position is real
     */
    public static int[] segmentIds(int[] tokens, int batch, int length, int eodId, int[] realLengths) {
        int[] out = new int[checkShape(tokens.length, batch, length)];
        segmentIds(tokens, batch, length, eodId, realLengths, out);
        return out;
    }

    /** As {@link #segmentIds(int[], int, int, int, int[])} into {@code out [B,L]}; allocation free. */
    public static void segmentIds(int[] tokens, int batch, int length, int eodId, int[] realLengths, int[] out) {
        checkShape(tokens.length, batch, length);
        checkShape(out.length, batch, length);
        for (int b = 0; b < batch; b++) {
            int real = realLength(realLengths, b, length);
            int row = b * length;
            int segment = 1;
            for (int i = 0; i < length; i++) {
                if (i >= real) {
                    out[row + i] = 0;
                    continue;
                }
                out[row + i] = segment;
                if (tokens[row + i] == eodId) {
                    segment++;
                }
            }
        }
    }

    /**
     * The segments of {@code segmentIds [B,L]} over the flattened axis of B·L positions: every maximal run of one
     * non-zero id inside a row, in order. Padding (id 0) is covered by no segment.
     */
    public static Segments segments(int[] segmentIds, int batch, int length) {
        checkShape(segmentIds.length, batch, length);
        return Varlen.fromSegmentIds(segmentIds, batch, length);
    }

    /**
     * {@code cu_seqlens [N+1]} over the flattened B·L axis, covering every position as variable-length kernels expect:
     * the boundaries of {@link #segments}, with each row's padding absorbed into the last segment before it (as
     * Megatron's inter-document path does) and a row of padding only forming one sequence of its own.
     */
    public static int[] cuSeqlens(int[] segmentIds, int batch, int length) {
        Segments segments = segments(segmentIds, batch, length);
        int[] cu = new int[segments.count() + batch + 1];
        int count = 0;
        int next = 0;
        for (int b = 0; b < batch; b++) {
            int rowEnd = (b + 1) * length;
            boolean any = false;
            while (next < segments.count() && segments.start(next) < rowEnd) {
                cu[count++] = segments.start(next);
                next++;
                any = true;
            }
            if (!any && length > 0) {
                cu[count++] = b * length;
            }
        }
        cu[count++] = batch * length;
        return Arrays.copyOf(cu, count);
    }

    /** Positions {@code [B,L]} restarting at 0 at each segment start; padding 0. */
    public static int[] positions(int[] segmentIds, int batch, int length) {
        checkShape(segmentIds.length, batch, length);
        int[] out = new int[segmentIds.length];
        for (int b = 0; b < batch; b++) {
            int row = b * length;
            int position = 0;
            for (int i = 0; i < length; i++) {
                int id = segmentIds[row + i];
                position = i > 0 && id == segmentIds[row + i - 1] ? position + 1 : 0;
                out[row + i] = id == 0 ? 0 : position;
            }
        }
        return out;
    }

    /** Tokens per segment {@code [N]}, in {@link #segments} order. */
    public static int[] tokenCounts(Segments segments) {
        int[] counts = new int[segments.count()];
        for (int n = 0; n < counts.length; n++) {
            counts[n] = segments.length(n);
        }
        return counts;
    }

    /** Loss tokens per segment {@code [N]}: positions of each segment where {@code lossMask [B·L]} is non-zero. */
    public static int[] lossTokenCounts(Segments segments, float[] lossMask) {
        if (lossMask.length != segments.tokens()) {
            throw new IllegalArgumentException("lossMask has " + lossMask.length + " positions, segments cover "
                    + segments.tokens());
        }
        int[] counts = new int[segments.count()];
        for (int n = 0; n < counts.length; n++) {
            for (int i = segments.start(n); i < segments.end(n); i++) {
                if (lossMask[i] != 0f) {
                    counts[n]++;
                }
            }
        }
        return counts;
    }

    static int checkShape(int size, int batch, int length) {
        if (batch < 0 || length < 0 || (long) batch * length != size) {
            throw new IllegalArgumentException("array of " + size + " values is not [B,L] = [" + batch + "," + length + "]");
        }
        return size;
    }

    private static int realLength(int[] realLengths, int b, int length) {
        if (realLengths == null) {
            return length;
        }
        int real = realLengths[b];
        if (real < 0 || real > length) {
            throw new IllegalArgumentException("realLengths[" + b + "] = " + real + " outside [0, " + length + "]");
        }
        return real;
    }
}
