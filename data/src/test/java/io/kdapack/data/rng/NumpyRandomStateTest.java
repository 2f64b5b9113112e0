package io.kdapack.data.rng;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.data.GoldenFiles;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** numpy's legacy RandomState streams, element for element, from golden/rng (produced by numpy itself). */
class NumpyRandomStateTest {
    private static final Pattern NAME = Pattern.compile("seed(\\d+)_(mt19937_raw_first64|shuffle_arange(\\d+)"
            + "|two_shuffles_first_int32_5000|two_shuffles_then_uint32_777)");

    @Test
    void everyGoldenStreamMatches() {
        SafeTensors golden = GoldenFiles.read("rng/numpy_randomstate.safetensors");
        int checked = 0;
        for (Map.Entry<String, Tensor> e : golden.tensors().entrySet()) {
            Matcher m = NAME.matcher(e.getKey());
            assertTrue(m.matches(), "unexpected tensor " + e.getKey());
            long seed = Long.parseLong(m.group(1));
            long[] expected = e.getValue().toLongArray();
            long[] actual;
            if (m.group(2).startsWith("mt19937")) {
                NumpyRandomState random = new NumpyRandomState(seed);
                actual = new long[expected.length];
                for (int i = 0; i < actual.length; i++) {
                    actual[i] = random.nextUint32();
                }
            } else if (m.group(3) != null) {
                actual = shuffledRange(new NumpyRandomState(seed), Integer.parseInt(m.group(3)));
            } else {
                NumpyRandomState random = new NumpyRandomState(seed);
                long[] first = shuffledRange(random, 5000);
                long[] second = shuffledRange(random, 777);
                actual = m.group(2).contains("first") ? first : second;
            }
            assertArrayEquals(expected, actual, e.getKey());
            checked++;
        }
        assertEquals(50, checked, "tensors checked");
    }

    @Test
    void readmeAnchors() {
        NumpyRandomState random = new NumpyRandomState(1234);
        assertEquals(822569775L, random.nextUint32());
        assertEquals(2137449171L, random.nextUint32());
        assertEquals(2671936806L, random.nextUint32());
        assertArrayEquals(new long[] {7, 2, 9, 1, 0, 8, 4, 5, 6, 3}, shuffledRange(new NumpyRandomState(1234), 10));
        assertArrayEquals(new long[] {8, 5, 0, 2, 1, 9, 7, 3, 6, 4}, shuffledRange(new NumpyRandomState(7), 10));
    }

    @Test
    void intAndLongShufflesAgreeAndSubrangesLeaveTheRestAlone() {
        int[] ints = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
        new NumpyRandomState(99).shuffle(ints, 2, 12);
        long[] longs = shuffledRange(new NumpyRandomState(99), 10);
        assertEquals(0, ints[0]);
        assertEquals(1, ints[1]);
        for (int i = 0; i < 10; i++) {
            assertEquals(longs[i] + 2, ints[i + 2]);
        }
    }

    @Test
    void intervalStaysInRangeAndZeroDrawsNothing() {
        NumpyRandomState a = new NumpyRandomState(5);
        NumpyRandomState b = new NumpyRandomState(5);
        assertEquals(0, a.interval(0));
        assertEquals(b.nextUint32(), a.nextUint32(), "interval(0) must not draw");
        for (long max : new long[] {1, 2, 3, 7, 8, 1000, 0xFFFFFFFFL, 0x1_0000_0000L, Long.MAX_VALUE}) {
            for (int i = 0; i < 200; i++) {
                long v = a.interval(max);
                assertTrue(v >= 0 && v <= max, v + " outside [0, " + max + "]");
            }
        }
        assertThrows(IllegalArgumentException.class, () -> new NumpyRandomState(-1));
        assertThrows(IllegalArgumentException.class, () -> new NumpyRandomState(1L << 32));
    }

    private static long[] shuffledRange(NumpyRandomState random, int n) {
        long[] a = new long[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
        }
        random.shuffle(a);
        return a;
    }
}
