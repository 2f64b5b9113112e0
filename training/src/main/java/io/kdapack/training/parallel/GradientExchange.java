package io.kdapack.training.parallel;

import io.kdapack.core.nn.Parameter;
import java.util.List;

/**
 * The collective operations the {@code N} ranks of a data-parallel run perform together (docs/training.md, "Data
 * parallel"): a small all-gather (loss-token counts before the forward passes, loss reports after them, validation
 * sums) and the sum of the gradients in rank order. Every rank calls the same operations in the same sequence; an
 * implementation matches a call to its counterparts on the other ranks by its position in that sequence.
 *
 * <p>The one-process implementation ({@link #single()}) is what {@code kdapack train} uses; {@link InProcessGradientExchange}
 * joins ranks that are threads of one JVM, and the actor cluster's implementation ({@code io.kdapack.actors.cluster.parallel})
 * ranks on several machines. No implementation may change the arithmetic: the result of {@link #sumGradients} is
 * {@code ((g_0 + g_1) + g_2) + … + g_{N−1}}, element by element in fp32, on every rank.
 *
 * <p>A rank that cannot complete an operation (a peer gone, a time limit passed) throws
 * {@link GradientExchangeException}; the run then stops without an optimizer step.
 */
public interface GradientExchange extends AutoCloseable {

    /** This process's rank r, in {@code [0, ranks())}. */
    int rank();

    /** N, the number of ranks. */
    int ranks();

    /**
     * All-gather: every rank contributes {@code local} (each its own length), every rank receives all contributions in
     * rank order.
     *
     * @return {@code [N][]}: entry r is rank r's {@code local}; entry {@code rank()} is {@code local} itself
     * @throws GradientExchangeException when a rank does not take part within the implementation's time limit
     */
    long[][] allGather(long[] local);

    /**
     * Replaces the gradients of {@code parameters} on every rank by their sum over the ranks, added left to right in
     * rank order, element by element in fp32: {@code g ← ((g_0 + g_1) + g_2) + … + g_{N−1}}. Every rank passes its
     * parameters in the same order with the same shapes.
     *
     * @param parameters the model's parameters (their {@code grads} are read and overwritten)
     * @return the traffic and time of this operation on this rank
     * @throws GradientExchangeException when a rank does not take part within the implementation's time limit
     */
    ExchangeStats sumGradients(List<Parameter> parameters);

    /** Releases what the exchange holds (threads, actors); the default holds nothing. */
    @Override
    default void close() {
    }

    /** The exchange of a run with one rank: nothing to gather from anyone else, the gradients are already the sum. */
    static GradientExchange single() {
        return Single.INSTANCE;
    }

    /** {@link #single()}. */
    enum Single implements GradientExchange {
        INSTANCE;

        @Override
        public int rank() {
            return 0;
        }

        @Override
        public int ranks() {
            return 1;
        }

        @Override
        public long[][] allGather(long[] local) {
            return new long[][] {local};
        }

        @Override
        public ExchangeStats sumGradients(List<Parameter> parameters) {
            return ExchangeStats.NONE;
        }
    }
}
