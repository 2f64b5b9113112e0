package io.kdapack.core.kda;

import static io.kdapack.core.kda.KdaAssertions.assertChunkedMatchesRecurrent;
import static io.kdapack.core.kda.KdaAssertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The chunks laid over the packed axis whatever the documents ({@link KdaChunked}): every place a boundary can fall
 * inside a chunk, against the token-by-token reference, with and without initial and final states. Tolerances as
 * in {@link KdaChunkedVsRecurrentTest} (1e-5 outputs and states, 1e-4 gradients: both float32, another summation
 * order; a mask that let a neighbour document in would show at 1e-1).
 */
class KdaFlatChunkTest {

    private static final KdaOptions PLAIN = KdaOptions.plain();
    private static final KdaOptions SOFTPLUS = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);

    /** A boundary at every offset 0–63 inside the second chunk, the first document entering it with its state. */
    static Stream<Arguments> offsets() {
        return IntStream.range(0, 64).mapToObj(offset -> Arguments.of(offset));
    }

    @ParameterizedTest(name = "boundary at offset {0}")
    @MethodSource("offsets")
    void boundaryAtEveryOffsetInsideAChunk(int offset) {
        // 64 + offset, then a document of 3 (a second boundary in the same chunk unless offset > 60), then 70.
        int[] lengths = {64 + offset, 3, 70};
        assertChunkedMatchesRecurrent("offset " + offset, RandomKda.packed(100 + offset, lengths, 1, 2, 8, 8, PLAIN, true, 0));
        assertChunkedMatchesRecurrent("offset " + offset + " training", RandomKda.packed(200 + offset, lengths, 1, 1, 8, 8, PLAIN, false, 0));
    }

    static Stream<Arguments> cases() {
        int[] ones = new int[70];
        Arrays.fill(ones, 1);
        return Stream.of(
                Arguments.of("70 documents of 1 token", RandomKda.packed(1, ones, 1, 1, 8, 8, PLAIN, true, 0)),
                Arguments.of("1-token documents between long ones", RandomKda.packed(2,
                        new int[] {1, 63, 1, 1, 64, 1, 130, 1}, 1, 2, 16, 8, PLAIN, true, 0)),
                Arguments.of("runs of zero-length sequences", RandomKda.packed(3,
                        new int[] {0, 0, 5, 0, 0, 0, 70, 0, 1, 0, 0, 40, 0}, 1, 1, 8, 16, PLAIN, true, 0)),
                Arguments.of("only zero-length sequences", RandomKda.packed(4, new int[] {0, 0, 0}, 1, 1, 8, 8, PLAIN,
                        true, 0)),
                Arguments.of("gates of -1000 across many boundaries", RandomKda.packed(5,
                        new int[] {10, 3, 40, 1, 7, 90, 2, 33}, 2, 2, 16, 16, PLAIN, true, 0.2)),
                Arguments.of("K!=V, HV=3H, T not a multiple of 64", RandomKda.packed(6,
                        new int[] {17, 50, 2, 69, 1}, 2, 6, 24, 12, SOFTPLUS, true, 0.02)),
                Arguments.of("gates in the op, no initial states", RandomKda.packed(7, new int[] {31, 1, 100, 9},
                        1, 2, 16, 16, SOFTPLUS, false, 0)),
                Arguments.of("runs cut after 2048 tokens", RandomKda.packed(8, runOfDocuments(2300, 37), 1, 1, 8, 8,
                        PLAIN, true, 0)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void chunkedMatchesRecurrent(String name, RandomKda.Problem p) {
        assertChunkedMatchesRecurrent(name, p);
    }

    @Test
    void allPaddingRowsAndPaddingInsideARow() {
        // [B=3, T=100]: row 0 = ids 1 ×30, 2 ×1, padding ×9, 3 ×60; row 1 all padding; row 2 = padding ×70, 4 ×30.
        int rowLength = 100;
        int[] ids = new int[3 * rowLength];
        Arrays.fill(ids, 0, 30, 1);
        ids[30] = 2;
        Arrays.fill(ids, 40, 100, 3);
        Arrays.fill(ids, 2 * rowLength + 70, 3 * rowLength, 4);
        Segments segments = Varlen.fromSegmentIds(ids, 3, rowLength);
        RandomKda.Problem p = RandomKda.draw(9, segments, 1, 2, 8, 8, SOFTPLUS, true, 0);
        assertChunkedMatchesRecurrent("padding", p);
        KdaBackend.KdaResult r = new KdaChunked(2).forward(p.inputs(), p.options());
        KdaBackend.KdaGradients g = new KdaChunked(2).backward(p.inputs(), p.options(), p.dO(), p.dHt());
        int perToken = 2 * 8;
        for (int pos = 0; pos < ids.length; pos++) {
            if (ids[pos] == 0) {
                for (int i = 0; i < perToken; i++) {
                    assertEquals(0f, r.o()[pos * perToken + i], "o at padding " + pos);
                    assertEquals(0f, g.dv()[pos * perToken + i], "dv at padding " + pos);
                    assertEquals(0f, g.dg()[pos * perToken + i], "dg at padding " + pos);
                }
            }
        }
    }

    /** The training case: no initial states, no final states asked for, as the model calls the op. */
    @Test
    void trainingCaseSkipsFinalStatesAndGivesTheSameOutputsAndGradients() {
        RandomKda.Problem p = RandomKda.packed(10, new int[] {5, 64, 1, 1, 100, 20, 3}, 1, 2, 16, 8, SOFTPLUS, false,
                0.01);
        KdaChunked chunked = new KdaChunked(2);
        KdaBackend.KdaResult withStates = chunked.forward(p.inputs(), p.options());
        KdaTape tape = chunked.forwardForBackward(p.inputs(), p.options(), false);
        assertNull(tape.result().ht(), "no final states were asked for");
        assertArrayEquals(withStates.o(), tape.result().o(), "o does not depend on asking for the final states");
        KdaBackend.KdaGradients training = chunked.backward(tape, p.dO(), null);
        KdaBackend.KdaGradients reference = new KdaRecurrent(2).backward(p.inputs(), p.options(), p.dO(), null);
        assertClose("dq", training.dq(), reference.dq(), 1e-4);
        assertClose("dk", training.dk(), reference.dk(), 1e-4);
        assertClose("dv", training.dv(), reference.dv(), 1e-4);
        assertClose("dg", training.dg(), reference.dg(), 1e-4);
        assertClose("dbeta", training.dBeta(), reference.dBeta(), 1e-4);
        assertClose("dA_log", training.dALog(), reference.dALog(), 1e-4);
        assertClose("ddt_bias", training.dDtBias(), reference.dDtBias(), 1e-4);
    }

    @Test
    void runsStartAtDocumentsAfterPaddingAndAfter2048Tokens() {
        KdaChunked chunked = new KdaChunked(1);
        Segments packed = Varlen.fromCuSeqlens(new int[] {0, 0, 1000, 2000, 2100, 2100, 4200, 4300}, 4300);
        assertArrayEquals(new int[] {0, 5, 6, 7}, chunked.runs(packed), "cut at the first start >= 2048 after a run's");
        assertArrayEquals(new int[] {0, 1, 2}, chunked.runs(Varlen.fromCuSeqlens(new int[] {0, 2048, 2100}, 2100)),
                "a document starting exactly 2048 tokens after its run's start starts the next run");
        assertArrayEquals(new int[] {0, 2, 4, 5}, chunked.runs(Varlen.fromCuSeqlens(
                new int[] {0, 1100, 2200, 3300, 4400, 5500}, 5500)), "2048 tokens counted from each run's own start");
        int[] ids = new int[20];
        Arrays.fill(ids, 0, 5, 1);
        Arrays.fill(ids, 5, 8, 2);
        Arrays.fill(ids, 12, 20, 3);
        assertArrayEquals(new int[] {0, 2, 3}, chunked.runs(Varlen.fromSegmentIds(ids, 2, 10)),
                "padding between documents starts a new run");
    }

    /** Lengths of documents of {@code length} tokens (the last shorter) covering {@code tokens}. */
    private static int[] runOfDocuments(int tokens, int length) {
        int count = (tokens + length - 1) / length;
        int[] lengths = new int[count];
        Arrays.fill(lengths, length);
        lengths[count - 1] = tokens - (count - 1) * length;
        return lengths;
    }
}
