package io.kdapack.core.linalg;

import java.lang.ref.WeakReference;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * Parallel loops on a fork-join pool whose workers, between loops, wait for the next one spinning for a while
 * ({@value #LINGER_NANOS} ns) rather than parked, as the threads of OpenMP runtimes and BLAS libraries do.
 *
 * <p>Why: a training step is hundreds of short parallel loops (each product's tasks, each elementwise pass) with
 * serial stretches between them. A fork-join worker parks as soon as it finds nothing to do, and on the VMs this runs
 * on, a core idle for half a millisecond is put to sleep by the host: waking the parked worker then took 150 µs
 * (median, 2 ms of idleness; 5 µs after 0.1 ms), each loop starting on one thread. A lingering worker picks the next
 * loop up within microseconds. The cost is a core kept busy for at most {@value #LINGER_NANOS} ns after a loop when
 * no other follows, and it stops at once when the pool has other tasks queued.
 *
 * <p>Each participant of a loop (the caller, then each worker in the order it joins) owns an equal range of its
 * iterations and takes them from the front; one that has run out takes the others' from the back. So a thread meets
 * the rows of the next loop it wrote in the last, still in its core's cache (claiming every iteration in turn instead
 * made the step 4.5 % slower), and a worker that joins late costs no more than its share. {@link #runInOrder} hands
 * the iterations out one at a time, in order, for work listed longest first. Which thread runs an iteration never
 * changes a result: the bodies write disjoint data (see the callers). One loop runs on a team at a time; a second at
 * once (nested in a body, or from another thread) runs as a parallel stream of the pool.
 */
public final class Team {
    /** How long a worker waits, spinning, for the next loop after its last iteration. */
    static final long LINGER_NANOS = 1_000_000L;
    /** Each pool's team, for as long as the pool lives (a team refers to its pool only weakly). */
    private static final Map<ForkJoinPool, Team> TEAMS = Collections.synchronizedMap(new WeakHashMap<>());

    private final WeakReference<ForkJoinPool> pool;
    /** The workers besides the caller a loop can use: the pool's parallelism less one. */
    private final int helpers;
    /** The loop now running, or null; one at a time (a second, concurrent or nested, runs as a parallel stream). */
    private final AtomicReference<Loop> current = new AtomicReference<>();
    /** Workers running {@link #linger} (forked, working or spinning). */
    private final AtomicInteger lingering = new AtomicInteger();

    private Team(ForkJoinPool pool) {
        this.pool = new WeakReference<>(pool);
        this.helpers = pool.getParallelism() - 1;
    }

    /** The team of {@code pool}'s workers. */
    public static Team of(ForkJoinPool pool) {
        return TEAMS.computeIfAbsent(pool, Team::new);
    }

    /**
     * Runs {@code body(i)} for {@code i < count} in the pool of the calling fork-join task, or as a parallel stream
     * in the common pool from a thread outside any pool; the bodies must write disjoint data.
     */
    public static void forEach(int count, IntConsumer body) {
        ForkJoinPool pool = ForkJoinTask.getPool();
        if (pool == null) {
            IntStream.range(0, count).parallel().forEach(body);
        } else {
            of(pool).run(count, body);
        }
    }

    /**
     * Runs {@code body(i)} for {@code i < count} on this team: on the calling thread and the pool's lingering workers
     * where the caller is one of the pool's workers, else as one task of the pool, joined (a caller outside the pool
     * would make a thread more than the pool's parallelism).
     */
    public void run(int count, IntConsumer body) {
        run(count, body, false);
    }

    /**
     * Like {@link #run(int, IntConsumer)}, every participant taking the next iteration in order from one queue:
     * iterations listed longest first then spread evenly, whatever their sizes.
     */
    public void runInOrder(int count, IntConsumer body) {
        run(count, body, true);
    }

    private void run(int count, IntConsumer body, boolean inOrder) {
        if (count <= 0) {
            return;
        }
        if (count == 1 || helpers == 0) {
            for (int i = 0; i < count; i++) {
                body.accept(i);
            }
            return;
        }
        ForkJoinPool workers = pool.get(); // reachable: the caller holds it, or runs in it
        if (ForkJoinTask.getPool() != workers) {
            workers.submit(() -> run(count, body, inOrder)).join();
            return;
        }
        Loop loop = new Loop(count, body, Math.min(helpers + 1, count), inOrder);
        if (!current.compareAndSet(null, loop)) {
            IntStream.range(0, count).parallel().forEach(body);
            return;
        }
        try {
            int wanted = Math.min(helpers, count - 1);
            for (int l = lingering.get(); l < wanted; l = lingering.get()) {
                if (lingering.compareAndSet(l, l + 1)) {
                    ForkJoinTask.adapt(this::linger).fork();
                }
            }
            loop.work(0);
            loop.awaitDone();
        } finally {
            current.set(null);
        }
        loop.rethrow();
    }

    /**
     * A worker's turn: runs the iterations of the loops it finds, spinning between them, until none has come for
     * {@link #LINGER_NANOS} or the pool has other tasks to run.
     */
    private void linger() {
        ForkJoinPool workers = ForkJoinTask.getPool(); // this team's: a worker of it runs this
        try {
            long idleSince = System.nanoTime();
            for (int spins = 0; ; spins++) {
                Loop loop = current.get();
                if (loop != null && loop.hasWork()) {
                    loop.join();
                    idleSince = System.nanoTime();
                    continue;
                }
                if ((spins & 63) == 0 && (System.nanoTime() - idleSince > LINGER_NANOS
                        || workers.hasQueuedSubmissions() || workers.getQueuedTaskCount() > 0)) {
                    return;
                }
                Thread.onSpinWait();
            }
        } finally {
            // A loop published after the last look still runs: its caller claims whatever no worker takes.
            lingering.decrementAndGet();
        }
    }

    /**
     * One parallel loop: participant {@code p} of {@code P} (the caller 0, each worker that joins the next number)
     * owns the iterations {@code [p·count/P, (p+1)·count/P)} (see the class comment). Iterations are counted when
     * finished; the first failure is kept.
     */
    private static final class Loop {
        private final int count;
        private final IntConsumer body;
        /**
         * Per participant, its unclaimed range: front in the high half, end in the low half; one range for all where
         * the iterations run in order.
         */
        private final AtomicLong[] ranges;
        private final int parties;
        /** Participants so far; the caller is participant 0. */
        private final AtomicInteger participants = new AtomicInteger(1);
        private final AtomicInteger finished = new AtomicInteger();
        private volatile Throwable failure;

        Loop(int count, IntConsumer body, int parties, boolean inOrder) {
            this.count = count;
            this.body = body;
            this.parties = parties;
            int rangeCount = inOrder ? 1 : parties;
            this.ranges = new AtomicLong[rangeCount];
            for (int r = 0; r < rangeCount; r++) {
                long from = (long) r * count / rangeCount;
                long to = (long) (r + 1) * count / rangeCount;
                ranges[r] = new AtomicLong(from << 32 | to);
            }
        }

        boolean hasWork() {
            return participants.get() < parties;
        }

        /** A worker joins as the next participant, if any place is left, and runs iterations until none is left. */
        void join() {
            int p = participants.getAndIncrement();
            if (p < parties) {
                work(p % ranges.length);
            }
        }

        /** Runs iterations, its own range {@code p}'s first, until none is left. */
        void work(int p) {
            for (int i = take(ranges[p], true); i >= 0; i = take(ranges[p], true)) {
                run(i);
            }
            for (int other = 1; other < ranges.length; other++) {
                AtomicLong range = ranges[(p + other) % ranges.length];
                for (int i = take(range, false); i >= 0; i = take(range, false)) {
                    run(i);
                }
            }
        }

        /** Claims the first (or last) iteration left in {@code range}: −1 when none is left. */
        private static int take(AtomicLong range, boolean front) {
            for (long r = range.get(); ; r = range.get()) {
                int first = (int) (r >>> 32);
                int end = (int) r;
                if (first >= end) {
                    return -1;
                }
                long rest = front ? (long) (first + 1) << 32 | end : (long) first << 32 | (end - 1);
                if (range.compareAndSet(r, rest)) {
                    return front ? first : end - 1;
                }
            }
        }

        /** Runs iteration {@code i} unless an earlier one failed. */
        private void run(int i) {
            try {
                if (failure == null) {
                    body.accept(i);
                }
            } catch (Throwable t) {
                synchronized (this) {
                    if (failure == null) {
                        failure = t;
                    }
                }
            } finally {
                finished.incrementAndGet();
            }
        }

        /** Spins until every claimed iteration has finished (each is a short piece of work already running). */
        void awaitDone() {
            while (finished.get() < count) {
                Thread.onSpinWait();
            }
        }

        void rethrow() {
            Throwable t = failure;
            if (t instanceof RuntimeException e) {
                throw e;
            }
            if (t instanceof Error e) {
                throw e;
            }
            if (t != null) {
                throw new IllegalStateException(t);
            }
        }
    }
}
