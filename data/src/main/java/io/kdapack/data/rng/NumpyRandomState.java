package io.kdapack.data.rng;

/**
 * numpy's legacy {@code numpy.random.RandomState(seed)} restricted to what Megatron's GPTDataset uses: the MT19937
 * generator seeded by {@code init_genrand}, bounded integers by masked rejection, and {@code shuffle} of a 1-D array.
 * Reproduces numpy's streams bit for bit.
 *
 * <p>Not thread safe: one instance per dataset, used in Megatron's order (document index, then shuffle index).
 */
public final class NumpyRandomState {
    private static final int N = 624;
    private static final int M = 397;
    private static final int MATRIX_A = 0x9908B0DF;
    private static final int UPPER_MASK = 0x80000000;
    private static final int LOWER_MASK = 0x7FFFFFFF;

    private final int[] state = new int[N];
    private int position;

    /** {@code RandomState(seed)} for an integer seed in {@code [0, 2^32)}. */
    public NumpyRandomState(long seed) {
        if (seed < 0 || seed > 0xFFFFFFFFL) {
            throw new IllegalArgumentException("seed must be in [0, 2^32), got " + seed);
        }
        state[0] = (int) seed;
        for (int i = 1; i < N; i++) {
            int previous = state[i - 1];
            state[i] = 1812433253 * (previous ^ (previous >>> 30)) + i;
        }
        position = N;
    }

    /** The next raw 32-bit output, as an unsigned value in {@code [0, 2^32)}. */
    public long nextUint32() {
        return Integer.toUnsignedLong(next());
    }

    /** The next 64-bit output: two 32-bit draws, the first in the high half (numpy's {@code mt19937_next64}). */
    public long nextUint64() {
        long high = Integer.toUnsignedLong(next());
        return high << 32 | Integer.toUnsignedLong(next());
    }

    /**
     * A uniform integer in {@code [0, max]} (numpy's {@code random_interval}): draws masked by the smallest all-ones
     * mask {@code >= max}, rejected while above {@code max}; 32-bit draws while {@code max < 2^32}, 64-bit beyond.
     * {@code max = 0} returns 0 without drawing.
     */
    public long interval(long max) {
        if (max < 0) {
            throw new IllegalArgumentException("max must be >= 0, got " + max);
        }
        if (max == 0) {
            return 0;
        }
        long mask = -1L >>> Long.numberOfLeadingZeros(max);
        long value;
        if (max <= 0xFFFFFFFFL) {
            do {
                value = Integer.toUnsignedLong(next()) & mask;
            } while (value > max);
        } else {
            do {
                value = nextUint64() & mask;
            } while (value > max);
        }
        return value;
    }

    /** {@code shuffle(a)}: for i from n−1 down to 1, swap {@code a[i]} with {@code a[interval(i)]}. */
    public void shuffle(int[] a) {
        shuffle(a, 0, a.length);
    }

    /** Shuffles {@code a[from … to−1]} as numpy shuffles that slice on its own. */
    public void shuffle(int[] a, int from, int to) {
        checkRange(a.length, from, to);
        for (int i = to - from - 1; i > 0; i--) {
            int j = (int) interval(i);
            int t = a[from + i];
            a[from + i] = a[from + j];
            a[from + j] = t;
        }
    }

    /** {@link #shuffle(int[])} for a long array. */
    public void shuffle(long[] a) {
        shuffle(a, 0, a.length);
    }

    /** {@link #shuffle(int[], int, int)} for a long array. */
    public void shuffle(long[] a, int from, int to) {
        checkRange(a.length, from, to);
        for (int i = to - from - 1; i > 0; i--) {
            int j = (int) interval(i);
            long t = a[from + i];
            a[from + i] = a[from + j];
            a[from + j] = t;
        }
    }

    private static void checkRange(int length, int from, int to) {
        if (from < 0 || to < from || to > length) {
            throw new IllegalArgumentException("range [" + from + ", " + to + ") outside an array of length " + length);
        }
    }

    private int next() {
        if (position == N) {
            twist();
        }
        int y = state[position++];
        y ^= y >>> 11;
        y ^= (y << 7) & 0x9D2C5680;
        y ^= (y << 15) & 0xEFC60000;
        y ^= y >>> 18;
        return y;
    }

    private void twist() {
        for (int i = 0; i < N; i++) {
            int y = (state[i] & UPPER_MASK) | (state[(i + 1) % N] & LOWER_MASK);
            state[i] = state[(i + M) % N] ^ (y >>> 1) ^ ((y & 1) == 0 ? 0 : MATRIX_A);
        }
        position = 0;
    }
}
