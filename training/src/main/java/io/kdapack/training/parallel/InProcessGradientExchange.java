package io.kdapack.training.parallel;

import io.kdapack.core.nn.Parameter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The ranks of a data-parallel run as threads of one JVM, each with its own model, meeting at a barrier. It is the
 * reference the cluster's exchange is tested against and lets the training module test N ranks without actors.
 *
 * <p>{@link #sumGradients} goes parameter by parameter: at a barrier every rank adds the N gradients of the parameter
 * in rank order into a buffer of its own, then, after a second barrier (nobody reads any more), writes the buffer into
 * its gradient. Extra memory per rank: one buffer of the largest parameter. Nothing is copied between ranks but the
 * reads, so the traffic it reports is 0.
 */
public final class InProcessGradientExchange implements GradientExchange {
    private final Group group;
    private final int rank;

    private InProcessGradientExchange(Group group, int rank) {
        this.group = group;
        this.rank = rank;
    }

    /**
     * The exchanges of {@code ranks} threads; entry r is rank r's, to be used by one thread.
     *
     * @param timeout how long a rank waits for the others at each barrier before failing
     */
    public static List<GradientExchange> group(int ranks, Duration timeout) {
        if (ranks < 1) {
            throw new IllegalArgumentException("ranks must be >= 1, got " + ranks);
        }
        Group group = new Group(ranks, timeout);
        List<GradientExchange> out = new ArrayList<>(ranks);
        for (int r = 0; r < ranks; r++) {
            out.add(new InProcessGradientExchange(group, r));
        }
        return List.copyOf(out);
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int ranks() {
        return group.ranks;
    }

    @Override
    public long[][] allGather(long[] local) {
        group.slots[rank] = local.clone();
        group.await(rank);
        long[][] out = new long[group.ranks][];
        for (int r = 0; r < group.ranks; r++) {
            out[r] = group.slots[r].clone();
        }
        group.await(rank);
        return out;
    }

    @Override
    public ExchangeStats sumGradients(List<Parameter> parameters) {
        long start = System.nanoTime();
        group.parameters.set(rank, parameters);
        group.await(rank);
        long ready = System.nanoTime();
        for (int p = 0; p < parameters.size(); p++) {
            float[] sum = group.parameters.get(0).get(p).grads().clone();
            for (int r = 1; r < group.ranks; r++) {
                float[] g = group.parameters.get(r).get(p).grads();
                if (g.length != sum.length) {
                    throw new GradientExchangeException("parameter " + p + " has " + g.length + " elements on rank " + r
                            + " and " + sum.length + " on rank 0");
                }
                for (int i = 0; i < sum.length; i++) {
                    sum[i] += g[i];
                }
            }
            group.await(rank);
            System.arraycopy(sum, 0, parameters.get(p).grads(), 0, sum.length);
        }
        group.await(rank);
        return new ExchangeStats(0, 0, ready - start, System.nanoTime() - ready);
    }

    /** What the ranks share. */
    private static final class Group {
        final int ranks;
        final Duration timeout;
        final CyclicBarrier barrier;
        final long[][] slots;
        final List<List<Parameter>> parameters;

        Group(int ranks, Duration timeout) {
            this.ranks = ranks;
            this.timeout = timeout;
            this.barrier = new CyclicBarrier(ranks);
            this.slots = new long[ranks][];
            this.parameters = new ArrayList<>(java.util.Collections.nCopies(ranks, (List<Parameter>) null));
        }

        void await(int rank) {
            try {
                barrier.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | BrokenBarrierException e) {
                throw new GradientExchangeException("rank " + rank + " of " + ranks + ": the other ranks did not arrive "
                        + "within " + timeout, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new GradientExchangeException("rank " + rank + " of " + ranks + " was interrupted", e);
            }
        }
    }
}
