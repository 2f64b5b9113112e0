package io.kdapack.core.kda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kdapack.core.linalg.Workspace;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Inside a training step the chunked op takes its results from the step's workspace ({@link Workspace#lends}), arrays
 * that hold whatever an earlier user left there, and zeroes only what its chunks do not write whole: the padding
 * tokens' rows and the zero-length documents' states. Here every array the workspace lends holds NaN first: the results
 * must be bitwise those of fresh arrays, padding rows +0, with padding before, between and after the documents and an
 * empty document (whose final state is its initial one, or zero without initial states).
 */
class KdaWorkspaceTest {

    /** 760 tokens: padding 0–19, documents [20, 300), [300, 300), [340, 610) and [610, 700), padding 700–759. */
    private static final Segments SEGMENTS = new Segments(760, new int[] {20, 300, 340, 610},
            new int[] {300, 300, 610, 700});

    @Test
    void resultsFromAWorkspaceOfStaleArraysAreThoseOfFreshOnes() {
        List<KdaOptions> options = List.of(KdaOptions.plain(), KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f));
        int seed = 7;
        for (KdaOptions o : options) {
            // A q/k head per value head (rows prepared in the chunks) or two value heads a q/k head; four value heads
            // make the states [N,HV,K,V] long enough to be lent.
            for (int heads : new int[] {4, 2}) {
                for (boolean states : new boolean[] {false, true}) {
                    RandomKda.Problem p = RandomKda.draw(seed++, SEGMENTS, heads, 4, 64, 64, o, states, 0.01);
                    String what = o + ", H " + heads + (states ? ", with states" : "");
                    assertSameInAWorkspace(what, p, new KdaChunked(2));
                    assertSameInAWorkspace(what + ", recomputed on 1 thread", p, new KdaChunked(1, 0));
                    assertSameInAWorkspace(what + ", document-aligned", p, new KdaChunked(2).documentAligned());
                }
            }
        }
    }

    private static void assertSameInAWorkspace(String what, RandomKda.Problem p, KdaChunked backend) {
        KdaInputs in = p.inputs();
        KdaTape fresh = backend.forwardForBackward(in, p.options(), true);
        KdaBackend.KdaGradients expected = backend.backward(fresh, p.dO(), p.dHt());
        Workspace workspace = new Workspace(1L << 30);
        try (Workspace.Scope scope = workspace.open()) {
            poison(in.tokens() * in.valueHeads() * in.valueDim(), in.tokens() * in.heads() * in.keyDim(),
                    in.tokens() * in.valueHeads() * in.keyDim(), Math.toIntExact(in.stateSize()));
            KdaTape tape = backend.forwardForBackward(in, p.options(), true);
            assertArrayEquals(fresh.result().o(), tape.result().o(), what + ": o");
            assertArrayEquals(fresh.result().ht(), tape.result().ht(), what + ": ht");
            KdaBackend.KdaGradients actual = backend.backward(tape, p.dO(), p.dHt());
            assertArrayEquals(expected.dq(), actual.dq(), what + ": dq");
            assertArrayEquals(expected.dk(), actual.dk(), what + ": dk");
            assertArrayEquals(expected.dv(), actual.dv(), what + ": dv");
            assertArrayEquals(expected.dg(), actual.dg(), what + ": dg");
            assertArrayEquals(expected.dBeta(), actual.dBeta(), what + ": dbeta");
            assertArrayEquals(expected.dH0(), actual.dH0(), what + ": dh0");
            int row = in.valueHeads() * in.valueDim();
            assertEquals(0f, tape.result().o()[20 * row - 1], what + ": o of the last token of the leading padding");
            assertEquals(0f, tape.result().o()[700 * row], what + ": o of the first token of the trailing padding");
        }
    }

    /** Lends six arrays of each length, fills them with NaN and gives them back, to be lent again. */
    private static void poison(int... lengths) {
        for (int length : lengths) {
            float[][] arrays = new float[6][];
            for (int i = 0; i < arrays.length; i++) {
                arrays[i] = Workspace.floats(length);
                Arrays.fill(arrays[i], Float.NaN);
            }
            Workspace.release(arrays);
        }
    }
}
