package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The training pair forwardForBackward / backward(tape) against the plain forward and backward. */
class KdaTapeTest {

    private static final KdaOptions OPTIONS = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);

    @Test
    void tapeGivesTheSameResultsBitForBitOnRecycledBuffers() {
        RandomKda.Problem small = RandomKda.packed(5, new int[] {3, 64, 0, 65}, 2, 4, 16, 8, OPTIONS, true, 0);
        RandomKda.Problem large = RandomKda.packed(6, new int[] {200, 1, 129, 7}, 2, 4, 16, 8, OPTIONS, true, 0);
        KdaChunked training = new KdaChunked(2);
        // small, large, small: the later steps run on buffers and intermediates recycled, with their old
        // contents, from the earlier ones; the reference is a fresh backend each time.
        for (RandomKda.Problem p : new RandomKda.Problem[] {small, large, small}) {
            KdaChunked reference = new KdaChunked(2);
            KdaBackend.KdaResult expected = reference.forward(p.inputs(), OPTIONS);
            KdaBackend.KdaGradients expectedGrads = reference.backward(p.inputs(), OPTIONS, p.dO(), p.dHt());
            KdaTape tape = training.forwardForBackward(p.inputs(), OPTIONS);
            assertArrayEquals(expected.o(), tape.result().o(), "o");
            assertArrayEquals(expected.ht(), tape.result().ht(), "ht");
            assertSameGradients(expectedGrads, training.backward(tape, p.dO(), p.dHt()));
        }
    }

    /**
     * The chunks' start states are recycled from call to call without zeroing: each place is read only where the chunk
     * continues a document, after the chunk before wrote it. Calls of the same shape whose chunks continue documents
     * in different places (all of them, none, some), each run after another left its states in the recycled
     * arrays, match a fresh backend's bit for bit, with and without initial states.
     */
    @Test
    void recycledStartStatesAreReadOnlyWhereTheCallWroteThem() {
        KdaOptions plain = KdaOptions.plain();
        int[][] layouts = {{192}, {64, 64, 64}, {100, 92}, {192}, {30, 0, 98, 64}};
        for (boolean initialState : new boolean[] {false, true}) {
            KdaChunked training = new KdaChunked(1);
            for (int i = 0; i < layouts.length; i++) {
                RandomKda.Problem p = RandomKda.packed(20 + i, layouts[i], 2, 2, 16, 8, plain, initialState, 0);
                KdaChunked reference = new KdaChunked(1);
                KdaBackend.KdaGradients expected = reference.backward(p.inputs(), plain, p.dO(), p.dHt());
                KdaTape tape = training.forwardForBackward(p.inputs(), plain);
                assertArrayEquals(reference.forward(p.inputs(), plain).o(), tape.result().o(), "o");
                assertSameGradients(expected, training.backward(tape, p.dO(), p.dHt()));
            }
        }
    }

    @Test
    void liveTapesShareOneBudgetAndGiveItBackAfterTheirBackward() {
        RandomKda.Problem p = RandomKda.packed(9, new int[] {40, 90}, 1, 2, 8, 8, OPTIONS, true, 0);
        // Chunks 1 + 2, two value heads sharing one q/k head (prepared per call).
        long oneCall = 3 * 2 * KdaChunk.Intermediates.floats(8, 8);
        KdaChunked backend = new KdaChunked(2, oneCall);
        KdaBackend.KdaGradients expected = new KdaChunked(1).backward(p.inputs(), OPTIONS, p.dO(), p.dHt());

        KdaTape first = backend.forwardForBackward(p.inputs(), OPTIONS);
        assertEquals(oneCall, backend.keptFloats(), "the first tape keeps its intermediates");
        KdaTape second = backend.forwardForBackward(p.inputs(), OPTIONS);
        assertEquals(oneCall, backend.keptFloats(), "no room left: the second keeps start states only");
        assertSameGradients(expected, backend.backward(second, p.dO(), p.dHt()));
        assertSameGradients(expected, backend.backward(first, p.dO(), p.dHt()));
        assertEquals(0, backend.keptFloats(), "both backwards gave everything back");
        KdaTape third = backend.forwardForBackward(p.inputs(), OPTIONS);
        assertEquals(oneCall, backend.keptFloats(), "room again");
        assertSameGradients(expected, backend.backward(third, p.dO(), p.dHt()));
        KdaChunked oneShort = new KdaChunked(2, oneCall - 1);
        KdaTape fourth = oneShort.forwardForBackward(p.inputs(), OPTIONS);
        assertEquals(0, oneShort.keptFloats(), "a budget one float short of the call keeps start states only");
        assertSameGradients(expected, oneShort.backward(fourth, p.dO(), p.dHt()));
    }

    /** Chunks that prepare their rows prepare them again in the backward: the tape holds the intermediates alone. */
    @Test
    void chunksThatPrepareTheirRowsKeepOnlyTheIntermediates() {
        RandomKda.Problem p = RandomKda.packed(9, new int[] {40, 90}, 2, 2, 8, 8, OPTIONS, true, 0);
        KdaChunked backend = new KdaChunked(2);
        KdaTape tape = backend.forwardForBackward(p.inputs(), OPTIONS);
        assertEquals(3 * 2 * KdaChunk.Intermediates.floats(8, 8), backend.keptFloats());
        assertSameGradients(new KdaChunked(1).preparedPerCall().backward(p.inputs(), OPTIONS, p.dO(), p.dHt()),
                backend.backward(tape, p.dO(), p.dHt()));
        assertEquals(0, backend.keptFloats());
    }

    /**
     * One backend (one thread, so one scratch and one pool of spare intermediates) serving heads of another shape after
     * the first, as when one backend runs layers or models of different head dimensions: V alone grows, K alone grows
     * (each growth meets a scratch and spare intermediates too small for it), both shrink. Each call, plain and through a
     * tape (which borrows the spare intermediates the previous shape's backward gave back), matches the token-by-token
     * reference within the golden tolerances (1e-5 outputs and states, 1e-4 gradients) and equals a fresh backend bit
     * for bit.
     */
    @Test
    void oneBackendServesHeadsOfAnotherShapeAfterTheFirst() {
        int[][][] transitions = {{{16, 4}, {16, 8}}, {{8, 8}, {16, 8}}, {{16, 8}, {8, 4}}};
        for (int[][] transition : transitions) {
            KdaChunked shared = new KdaChunked(1);
            for (int[] shape : transition) {
                RandomKda.Problem p = RandomKda.packed(11 + shape[0] + shape[1], new int[] {70, 3}, 1, 2, shape[0],
                        shape[1], OPTIONS, true, 0);
                String what = "K=" + transition[0][0] + " V=" + transition[0][1] + ", then K=" + shape[0] + " V="
                        + shape[1] + ": ";
                KdaBackend.KdaResult reference = new KdaRecurrent(1).forward(p.inputs(), OPTIONS);
                KdaBackend.KdaGradients referenceGrads = new KdaRecurrent(1).backward(p.inputs(), OPTIONS, p.dO(),
                        p.dHt());
                KdaChunked fresh = new KdaChunked(1);
                KdaBackend.KdaResult expected = fresh.forward(p.inputs(), OPTIONS);
                KdaBackend.KdaGradients expectedGrads = fresh.backward(p.inputs(), OPTIONS, p.dO(), p.dHt());

                KdaBackend.KdaResult plain = shared.forward(p.inputs(), OPTIONS);
                KdaAssertions.assertClose(what + "o", plain.o(), reference.o(), 1e-5);
                KdaAssertions.assertClose(what + "ht", plain.ht(), reference.ht(), 1e-5);
                assertArrayEquals(expected.o(), plain.o(), what + "o");
                KdaTape tape = shared.forwardForBackward(p.inputs(), OPTIONS);
                assertArrayEquals(expected.o(), tape.result().o(), what + "o through a tape");
                KdaBackend.KdaGradients grads = shared.backward(tape, p.dO(), p.dHt());
                KdaAssertions.assertClose(what + "dq", grads.dq(), referenceGrads.dq(), 1e-4);
                KdaAssertions.assertClose(what + "dk", grads.dk(), referenceGrads.dk(), 1e-4);
                KdaAssertions.assertClose(what + "dv", grads.dv(), referenceGrads.dv(), 1e-4);
                KdaAssertions.assertClose(what + "dg", grads.dg(), referenceGrads.dg(), 1e-4);
                assertSameGradients(expectedGrads, grads);
            }
        }
    }

    /**
     * The budget of kept intermediates ({@link KdaChunked#KEPT_FLOATS}) bounds memory only if each chunk-head is
     * charged what it holds: {@code Intermediates.floats(K, V)} equals the lengths of every {@code float[]} an
     * {@code Intermediates} allocates, found by reflection so that an array added later is counted too.
     */
    @Test
    void theBudgetChargesExactlyTheFloatsTheIntermediatesHold() throws IllegalAccessException {
        for (int[] shape : new int[][] {{8, 8}, {64, 64}, {128, 128}, {7, 33}, {33, 7}}) {
            KdaChunk.Intermediates intermediates = new KdaChunk(shape[0], shape[1]).newIntermediates();
            assertEquals(floatsHeld(intermediates), KdaChunk.Intermediates.floats(shape[0], shape[1]),
                    "K=" + shape[0] + " V=" + shape[1]);
        }
    }

    /** The lengths of the {@code float[]} fields of {@code object}. */
    private static long floatsHeld(Object object) throws IllegalAccessException {
        long held = 0;
        for (java.lang.reflect.Field field : object.getClass().getDeclaredFields()) {
            if (field.getType() == float[].class) {
                held += ((float[]) field.get(object)).length;
            }
        }
        return held;
    }

    @Test
    void secondBackwardThroughATapeIsRefused() {
        RandomKda.Problem p = RandomKda.packed(7, new int[] {10, 70}, 1, 1, 8, 8, OPTIONS, false, 0);
        KdaChunked backend = new KdaChunked(1);
        KdaTape tape = backend.forwardForBackward(p.inputs(), OPTIONS);
        backend.backward(tape, p.dO(), p.dHt());
        var e = assertThrows(IllegalStateException.class, () -> backend.backward(tape, p.dO(), p.dHt()));
        assertTrue(e.getMessage().contains("already"), e.getMessage());
    }

    @Test
    void tapeOfAnotherBackendIsRecomputed() {
        RandomKda.Problem p = RandomKda.packed(8, new int[] {33, 5}, 1, 2, 8, 4, OPTIONS, true, 0);
        KdaChunked chunked = new KdaChunked(1);
        KdaTape foreign = new KdaRecurrent(1).forwardForBackward(p.inputs(), OPTIONS);
        assertSame(p.inputs(), foreign.inputs());
        assertSameGradients(chunked.backward(p.inputs(), OPTIONS, p.dO(), p.dHt()),
                chunked.backward(foreign, p.dO(), p.dHt()));
    }

    private static void assertSameGradients(KdaBackend.KdaGradients expected, KdaBackend.KdaGradients actual) {
        assertArrayEquals(expected.dq(), actual.dq(), "dq");
        assertArrayEquals(expected.dk(), actual.dk(), "dk");
        assertArrayEquals(expected.dv(), actual.dv(), "dv");
        assertArrayEquals(expected.dg(), actual.dg(), "dg");
        assertArrayEquals(expected.dBeta(), actual.dBeta(), "dbeta");
        assertArrayEquals(expected.dH0(), actual.dH0(), "dh0");
        assertArrayEquals(expected.dALog(), actual.dALog(), "dA_log");
        assertArrayEquals(expected.dDtBias(), actual.dDtBias(), "ddt_bias");
    }
}
