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
