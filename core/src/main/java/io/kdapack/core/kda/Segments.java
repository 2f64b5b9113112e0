package io.kdapack.core.kda;

/**
 * Sequence boundaries over a flattened token axis of {@code tokens} positions: sequence {@code n} covers
 * positions {@code start(n) … end(n)−1}. Sequences are disjoint and in increasing position order; a
 * sequence may be empty. Positions covered by no sequence are padding (they produce zero output and
 * receive zero gradient). Built from {@code cu_seqlens} (no padding) or from {@code [B,T]} segment ids
 * by {@code Varlen}.
 *
 * @param tokens total positions T
 * @param starts {@code [N]} first position of each sequence
 * @param ends   {@code [N]} one past the last position of each sequence
 */
public record Segments(int tokens, int[] starts, int[] ends) {

    /** Checks that the sequences are disjoint, in increasing order and inside {@code [0, tokens]}. */
    public Segments {
        if (tokens < 0) {
            throw new IllegalArgumentException("tokens must be >= 0, got " + tokens);
        }
        if (starts == null || ends == null) {
            throw new IllegalArgumentException("starts and ends must not be null");
        }
        if (starts.length != ends.length) {
            throw new IllegalArgumentException("starts has " + starts.length + " entries but ends has " + ends.length);
        }
        int previousEnd = 0;
        for (int n = 0; n < starts.length; n++) {
            if (starts[n] < previousEnd || ends[n] < starts[n] || ends[n] > tokens) {
                throw new IllegalArgumentException("segment " + n + " = [" + starts[n] + ", " + ends[n]
                        + ") must satisfy " + previousEnd + " <= start <= end <= tokens = " + tokens);
            }
            previousEnd = ends[n];
        }
    }

    public int count() {
        return starts.length;
    }

    public int start(int n) {
        return starts[n];
    }

    public int end(int n) {
        return ends[n];
    }

    public int length(int n) {
        return ends[n] - starts[n];
    }
}
