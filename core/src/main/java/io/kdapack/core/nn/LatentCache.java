package io.kdapack.core.nn;

import java.util.Arrays;

/**
 * One sequence's cache in one MLA layer: per token so far, the normalised compressed latent {@code c_kv} (the
 * output of {@code kv_a_layernorm}, {@code Ckv} values) followed by the rotated shared rotary key {@code k_pe}
 * ({@code R} values) — {@code rows [L, Ckv+R]}. Per-head keys and values are never stored: attention reads the
 * latent through the absorbed {@code kv_b_proj} weights (see {@link MlaAttention#extend}).
 *
 * <p>The array grows by doubling (an amortised copy) up to the tokens the owner allows; {@link #bytes()} counts
 * what is allocated.
 */
public final class LatentCache {
    private static final int INITIAL_ROWS = 16;

    private final int width;
    private float[] rows;
    private int length;

    /** @param width {@code Ckv + R} */
    public LatentCache(int width) {
        if (width < 1) {
            throw new IllegalArgumentException("latent cache width must be >= 1, got " + width);
        }
        this.width = width;
        this.rows = new float[0];
    }

    /** {@code Ckv + R}. */
    public int width() {
        return width;
    }

    /** Tokens cached L. */
    public int length() {
        return length;
    }

    /** {@code [capacity, Ckv+R]}: rows {@code 0 … L−1} are the cached tokens. */
    float[] rows() {
        return rows;
    }

    /** Bytes allocated for the rows. */
    public long bytes() {
        return 4L * rows.length;
    }

    /** Makes room for {@code extra} more rows. */
    void reserve(int extra) {
        long needed = (long) (length + extra) * width;
        if (needed > rows.length) {
            long grown = Math.max(needed, Math.max((long) INITIAL_ROWS * width, 2L * rows.length));
            if (grown > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("latent cache: " + (length + extra) + " tokens of width " + width
                        + " exceed one array");
            }
            rows = Arrays.copyOf(rows, (int) grown);
        }
    }

    /** Appends {@code count} rows (reserved before) written by the caller at rows {@code L … L+count−1}. */
    void advance(int count) {
        length += count;
    }

    /** An independent copy. */
    public LatentCache copy() {
        LatentCache c = new LatentCache(width);
        c.rows = Arrays.copyOf(rows, length * width);
        c.length = length;
        return c;
    }
}
