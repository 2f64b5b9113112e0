package io.kdapack.core.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

class TeamTest {

    @Test
    void runsEveryIterationOnceInEveryMode() throws Exception {
        ForkJoinPool pool = new ForkJoinPool(3);
        try {
            for (int count : new int[] {0, 1, 2, 3, 7, 64, 1000}) {
                for (boolean inOrder : new boolean[] {false, true}) {
                    AtomicIntegerArray runs = new AtomicIntegerArray(Math.max(count, 1));
                    Team team = Team.of(pool);
                    // From inside the pool (a layer's loop) and from outside it (a call from the main thread).
                    Runnable loop = () -> {
                        if (inOrder) {
                            team.runInOrder(count, runs::incrementAndGet);
                        } else {
                            team.run(count, runs::incrementAndGet);
                        }
                    };
                    pool.submit(loop).get();
                    loop.run();
                    for (int i = 0; i < count; i++) {
                        assertEquals(2, runs.get(i), "iteration " + i + " of " + count + ", in order " + inOrder);
                    }
                }
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void spreadsALoopOverTheWorkersAndKeepsTheirShares() throws Exception {
        ForkJoinPool pool = new ForkJoinPool(2);
        try {
            Set<Thread> threads = ConcurrentHashMap.newKeySet();
            CountDownLatch both = new CountDownLatch(2);
            // Each iteration waits until two threads have started one: passes only if a worker joins the caller.
            pool.submit(() -> Team.forEach(2, i -> {
                threads.add(Thread.currentThread());
                both.countDown();
                try {
                    assertTrue(both.await(10, TimeUnit.SECONDS), "a second worker joined the loop");
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            })).get(20, TimeUnit.SECONDS);
            assertEquals(2, threads.size());
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void nestedLoopsAndLoopsFromSeveralThreadsAllComplete() throws Exception {
        ForkJoinPool pool = new ForkJoinPool(2);
        try {
            int outer = 16;
            int inner = 50;
            AtomicIntegerArray runs = new AtomicIntegerArray(outer * inner);
            Runnable nested = () -> Team.forEach(outer, i -> Team.forEach(inner, j -> runs.incrementAndGet(i * inner
                    + j)));
            var a = pool.submit(nested);
            var b = pool.submit(nested);
            a.get(30, TimeUnit.SECONDS);
            b.get(30, TimeUnit.SECONDS);
            for (int i = 0; i < outer * inner; i++) {
                assertEquals(2, runs.get(i), "iteration " + i);
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void aFailingIterationFailsTheLoopWithItsOwnException() throws Exception {
        ForkJoinPool pool = new ForkJoinPool(2);
        try {
            IllegalArgumentException thrown = new IllegalArgumentException("iteration 5");
            Team team = Team.of(pool);
            Object seen = pool.submit(() -> {
                try {
                    team.run(20, i -> {
                        if (i == 5) {
                            throw thrown;
                        }
                    });
                    return "no exception";
                } catch (IllegalArgumentException e) {
                    return e;
                }
            }).get(20, TimeUnit.SECONDS);
            assertSame(thrown, seen);
            // The team runs the next loop as usual.
            AtomicIntegerArray runs = new AtomicIntegerArray(10);
            team.run(10, runs::incrementAndGet);
            for (int i = 0; i < 10; i++) {
                assertEquals(1, runs.get(i));
            }
        } finally {
            pool.shutdown();
        }
    }
}
