package io.kdapack.core.kda;

import java.util.Arrays;

/**
 * Conversions between the two varlen forms of architecture §2 and {@link Segments}.
 *
 * <ul>
 *   <li>{@code cu_seqlens [N+1]}: {@code 0 = c_0 ≤ c_1 ≤ … ≤ c_N = T}; sequence {@code n} is tokens
 *       {@code c_n … c_{n+1}−1}; equal neighbours are zero-length sequences.</li>
 *   <li>{@code segment_ids [B,T]}: 0 = padding; a new segment starts wherever the id changes (ids need not
 *       increase; the same id after padding starts a new segment); segments never cross a row.</li>
 * </ul>
 */
public final class Varlen {

    private Varlen() {
    }

    /** Segments of {@code cu_seqlens [N+1]} over {@code tokens} positions; validates the boundaries. */
    public static Segments fromCuSeqlens(int[] cuSeqlens, int tokens) {
        validateCuSeqlens(cuSeqlens, tokens);
        int n = cuSeqlens.length - 1;
        return new Segments(tokens, Arrays.copyOfRange(cuSeqlens, 0, n), Arrays.copyOfRange(cuSeqlens, 1, n + 1));
    }

    /**
     * Checks {@code cu_seqlens}: at least one entry, starts at 0, non-decreasing, ends at {@code tokens}.
     */
    public static void validateCuSeqlens(int[] cuSeqlens, int tokens) {
        if (cuSeqlens == null || cuSeqlens.length < 1) {
            throw new IllegalArgumentException("cu_seqlens must have at least one entry, got "
                    + (cuSeqlens == null ? "null" : "[]"));
        }
        if (cuSeqlens[0] != 0) {
            throw new IllegalArgumentException("cu_seqlens must start at 0, got cu_seqlens[0] = " + cuSeqlens[0]);
        }
        for (int i = 1; i < cuSeqlens.length; i++) {
            if (cuSeqlens[i] < cuSeqlens[i - 1]) {
                throw new IllegalArgumentException("cu_seqlens must be non-decreasing, got cu_seqlens[" + i + "] = "
                        + cuSeqlens[i] + " < cu_seqlens[" + (i - 1) + "] = " + cuSeqlens[i - 1]);
            }
        }
        int last = cuSeqlens[cuSeqlens.length - 1];
        if (last != tokens) {
            throw new IllegalArgumentException("cu_seqlens must end at T = " + tokens + ", got cu_seqlens["
                    + (cuSeqlens.length - 1) + "] = " + last);
        }
    }

    /** {@code cu_seqlens [N+1]} of segments that cover every position (no padding). */
    public static int[] toCuSeqlens(Segments segments) {
        int n = segments.count();
        int[] cu = new int[n + 1];
        for (int i = 0; i < n; i++) {
            if (segments.start(i) != cu[i]) {
                throw new IllegalArgumentException("segments have padding before segment " + i + " (start "
                        + segments.start(i) + ", previous end " + cu[i] + "); cu_seqlens cannot express padding");
            }
            cu[i + 1] = segments.end(i);
        }
        if (cu[n] != segments.tokens()) {
            throw new IllegalArgumentException("segments end at " + cu[n] + " but T = " + segments.tokens()
                    + "; cu_seqlens cannot express trailing padding");
        }
        return cu;
    }

    /**
     * Segment ids {@code [T]} of {@code cu_seqlens}: sequence {@code n} gets id {@code n+1}. Zero-length
     * sequences own no token and so leave no trace in the ids.
     */
    public static int[] segmentIdsFromCuSeqlens(int[] cuSeqlens, int tokens) {
        validateCuSeqlens(cuSeqlens, tokens);
        int[] ids = new int[tokens];
        for (int n = 0; n + 1 < cuSeqlens.length; n++) {
            Arrays.fill(ids, cuSeqlens[n], cuSeqlens[n + 1], n + 1);
        }
        return ids;
    }

    /**
     * Segments of {@code segment_ids [B,T]} (row-major, {@code rows·rowLength} values) over the flattened
     * {@code B·T} axis, in order of appearance (row 0 left to right, then row 1, …).
     */
    public static Segments fromSegmentIds(int[] segmentIds, int rows, int rowLength) {
        if (rows < 1 || rowLength < 0) {
            throw new IllegalArgumentException("segment_ids shape [B,T] must have B >= 1 and T >= 0, got ["
                    + rows + "," + rowLength + "]");
        }
        if (segmentIds == null || segmentIds.length != (long) rows * rowLength) {
            throw new IllegalArgumentException("segment_ids has " + (segmentIds == null ? "no" : segmentIds.length)
                    + " values, expected [B,T] = [" + rows + "," + rowLength + "] = " + (long) rows * rowLength);
        }
        int[] starts = new int[segmentIds.length];
        int[] ends = new int[segmentIds.length];
        int count = 0;
        for (int b = 0; b < rows; b++) {
            int rowStart = b * rowLength;
            for (int t = 0; t < rowLength; t++) {
                int p = rowStart + t;
                int id = segmentIds[p];
                if (id < 0) {
                    throw new IllegalArgumentException("segment_ids must be >= 0 (0 = padding), got segment_ids["
                            + b + "," + t + "] = " + id);
                }
                boolean continues = t > 0 && segmentIds[p - 1] == id;
                if (id != 0 && !continues) {
                    starts[count] = p;
                    count++;
                }
                if (id != 0) {
                    ends[count - 1] = p + 1;
                }
            }
        }
        return new Segments(segmentIds.length, Arrays.copyOf(starts, count), Arrays.copyOf(ends, count));
    }

    /** Segment ids {@code [T]} of segments: segment {@code n} gets id {@code n+1}, padding 0. */
    public static int[] toSegmentIds(Segments segments) {
        int[] ids = new int[segments.tokens()];
        for (int n = 0; n < segments.count(); n++) {
            Arrays.fill(ids, segments.start(n), segments.end(n), n + 1);
        }
        return ids;
    }

    /**
     * The seed RFC's fixed-length form for callers that need fixed shapes: {@code cu_seqlens} of exactly
     * {@code maxSegments + 1} entries, the real boundaries followed by a phantom tail of zero-length
     * sequences at {@code T}. Segments must cover every token (no padding). More segments than
     * {@code maxSegments} is an error that says how many were found (the RFC only warned and let
     * documents attend to each other).
     */
    public static int[] fixedLengthCuSeqlens(Segments segments, int maxSegments) {
        if (maxSegments < 1) {
            throw new IllegalArgumentException("maxSegments must be >= 1, got " + maxSegments);
        }
        int[] cu = toCuSeqlens(segments);
        int found = segments.count();
        if (found > maxSegments) {
            throw new IllegalArgumentException("found " + found + " segments, more than maxSegments = " + maxSegments);
        }
        int[] fixed = Arrays.copyOf(cu, maxSegments + 1);
        Arrays.fill(fixed, cu.length, fixed.length, segments.tokens());
        return fixed;
    }
}
