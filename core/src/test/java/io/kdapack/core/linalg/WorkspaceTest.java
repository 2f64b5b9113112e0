package io.kdapack.core.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WorkspaceTest {

    private static final int N = Workspace.MIN_LENGTH;

    @Test
    void theNextScopeReusesTheArraysOfTheLastZeroedWhereAsked() {
        Workspace workspace = new Workspace(1L << 30);
        float[] first;
        float[] second;
        try (Workspace.Scope scope = workspace.open()) {
            first = Workspace.zeros(N);
            second = Workspace.floats(N);
            assertNotSame(first, second);
            Arrays.fill(first, 3f);
            Arrays.fill(second, 4f);
        }
        try (Workspace.Scope scope = workspace.open()) {
            float[] again = Workspace.zeros(N);
            float[] againToo = Workspace.floats(N);
            assertTrue(again == first && againToo == second || again == second && againToo == first);
            assertArrayEquals(new float[N], again, "zeros() clears a reused array");
            assertEquals(againToo == first ? 3f : 4f, againToo[0], "floats() leaves a reused array as it was");
        }
    }

    @Test
    void arraysGivenBackInAScopeAreLentAgainInIt() {
        Workspace workspace = new Workspace(1L << 30);
        try (Workspace.Scope scope = workspace.open()) {
            float[] a = Workspace.floats(N);
            Workspace.release(a, new float[N], null); // arrays it did not lend are ignored
            assertSame(a, Workspace.floats(N));
            assertNotSame(a, Workspace.floats(N));
        }
    }

    @Test
    void outsideAScopeOnAnotherThreadAndForSmallArraysItAllocates() throws Exception {
        Workspace workspace = new Workspace(1L << 30);
        float[] outside = Workspace.floats(N);
        Workspace.release(outside);
        assertNotSame(outside, Workspace.floats(N));
        try (Workspace.Scope scope = workspace.open()) {
            Workspace.floats(N);
            float[] small = Workspace.floats(N - 1);
            Workspace.release(small);
            assertNotSame(small, Workspace.floats(N - 1));
            // The same workspace opened on another thread while open here lends nothing there.
            float[][] elsewhere = CompletableFuture.supplyAsync(() -> {
                try (Workspace.Scope other = workspace.open()) {
                    float[] a = Workspace.floats(N);
                    Workspace.release(a);
                    return new float[][] {a, Workspace.floats(N)};
                }
            }).get(10, TimeUnit.SECONDS);
            assertNotSame(elsewhere[0], elsewhere[1]);
            // A second scope on this thread lends nothing either, and closing it leaves the first open.
            try (Workspace.Scope nested = workspace.open()) {
                float[] a = Workspace.floats(N);
                Workspace.release(a);
                assertSame(a, Workspace.floats(N), "still the outer scope's workspace");
            }
        }
    }

    @Test
    void aScopeThatNeedsOtherArraysLeavesTheEarlierOnesWithinTheLimit() {
        Workspace workspace = new Workspace(4L * (N + N + 1));
        float[] first;
        try (Workspace.Scope scope = workspace.open()) {
            first = Workspace.floats(N);
        }
        try (Workspace.Scope scope = workspace.open()) {
            Workspace.floats(N + 1); // another shape: fits beside the first
        }
        try (Workspace.Scope scope = workspace.open()) {
            assertSame(first, Workspace.floats(N));
            Workspace.floats(N + 2); // over the limit with the other two: allocated, not kept
        }
        try (Workspace.Scope scope = workspace.open()) {
            assertSame(first, Workspace.floats(N));
            float[] other = Workspace.floats(N + 1);
            assertEquals(N + 1, other.length);
        }
    }

    @Test
    void lendsAndKeepsNoMoreThanItsLimit() {
        Workspace workspace = new Workspace(4L * N * 2); // two arrays
        float[][] lent = new float[3][];
        try (Workspace.Scope scope = workspace.open()) {
            for (int i = 0; i < 3; i++) {
                lent[i] = Workspace.floats(N);
            }
        }
        try (Workspace.Scope scope = workspace.open()) {
            float[] a = Workspace.floats(N);
            float[] b = Workspace.floats(N);
            float[] c = Workspace.floats(N);
            assertEquals(2, Arrays.stream(new float[][] {a, b, c})
                    .filter(x -> x == lent[0] || x == lent[1] || x == lent[2]).count());
        }
    }
}
