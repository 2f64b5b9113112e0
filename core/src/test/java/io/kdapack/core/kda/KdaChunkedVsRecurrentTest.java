package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertChunkedMatchesRecurrent;

import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The chunked backend against the token-by-token reference on awkward random cases. Both run in float32
 * with different summation orders; the golden files show each within ~1e-7 of float64, so the same
 * tolerances as there (1e-5 outputs/states, 1e-4 gradients) are generous yet catch any algebra error.
 */
class KdaChunkedVsRecurrentTest {

    private static final KdaOptions PLAIN = KdaOptions.plain();
    private static final KdaOptions SOFTPLUS = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
    private static final KdaOptions LOWER_BOUND = KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f);

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("many 1-4 token docs", RandomKda.packed(1, tinyDocs(60), 1, 1, 16, 16, PLAIN, true, 0)),
                Arguments.of("boundaries 63/64/65/128", RandomKda.packed(2, new int[] {63, 64, 65, 128, 1, 129},
                        2, 2, 32, 16, PLAIN, true, 0)),
                Arguments.of("zero-length sequences, T not a multiple of 64", RandomKda.packed(3,
                        new int[] {0, 70, 0, 0, 131, 0}, 1, 2, 16, 32, PLAIN, true, 0)),
                Arguments.of("gates of -1000", RandomKda.packed(4, new int[] {100, 90}, 2, 2, 16, 16, PLAIN, true, 0.2)),
                Arguments.of("K=V=128", RandomKda.packed(5, new int[] {130, 70}, 1, 1, 128, 128, PLAIN, true, 0)),
                Arguments.of("K!=V", RandomKda.packed(6, new int[] {77, 64}, 1, 1, 48, 24, PLAIN, true, 0)),
                Arguments.of("HV=3H", RandomKda.packed(7, new int[] {40, 90}, 2, 6, 16, 16, PLAIN, true, 0)),
                Arguments.of("odd K=7 V=33", RandomKda.packed(8, new int[] {66, 5, 60}, 1, 2, 7, 33, PLAIN, true, 0)),
                Arguments.of("odd K=33 V=7", RandomKda.packed(9, new int[] {129, 3}, 1, 1, 33, 7, PLAIN, true, 0.05)),
                Arguments.of("softplus gate, l2norm, beta sigmoid, GVA", RandomKda.packed(10, new int[] {100, 1, 64},
                        2, 4, 16, 8, SOFTPLUS, true, 0)),
                Arguments.of("lower-bound gate", RandomKda.packed(11, new int[] {65, 70}, 1, 2, 16, 16, LOWER_BOUND,
                        true, 0)),
                Arguments.of("lower-bound gate without A_log", RandomKda.withoutALog(RandomKda.packed(12,
                        new int[] {80, 50}, 1, 1, 16, 16, LOWER_BOUND, false, 0))),
                Arguments.of("scale 0.1, gates of -1000 in the op's raw input", RandomKda.packed(13, new int[] {90},
                        1, 1, 16, 16, new KdaOptions(0.1f, true, KdaOptions.Gate.NONE, 0f, true), true, 0.1)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void chunkedMatchesRecurrent(String name, RandomKda.Problem p) {
        assertChunkedMatchesRecurrent(name, p);
    }

    private static int[] tinyDocs(int count) {
        Random rnd = new Random(42);
        int[] lengths = new int[count];
        for (int i = 0; i < count; i++) {
            lengths[i] = 1 + rnd.nextInt(4);
        }
        return lengths;
    }
}
