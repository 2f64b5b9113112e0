package io.kdapack.actors.cluster.parallel;

/** What travels on the large-message lane to a rank's {@code kdapack-gradients} child: chunks and their acknowledgements. */
sealed interface GradientMessage extends ParallelMessage {

    /** The exchange (collective operation number) this belongs to. */
    long exchange();

    /** The rank that sent it. */
    int fromRank();

    /** Which pass of {@link PekkoGradientExchange#sumGradients}: the partial sums going up the chain, or the result. */
    enum Pass { REDUCE, BROADCAST }

    /**
     * Floats {@code [offset, offset + length)} of {@code data}: the values of gradient chunk {@code index} of the
     * exchange. On the sender it is a view of the rank's gradient buffer (no copy; the sender leaves that region alone
     * until the chunk is acknowledged); {@link ParallelSerializer} writes the view straight into Artery's buffer and the
     * receiver gets its own array with offset 0.
     */
    record Chunk(long exchange, int fromRank, Pass pass, int index, float[] data, int offset, int length)
            implements GradientMessage {
    }

    /** Chunk {@code index} of {@code pass} was consumed: the sender may send one more on that link. */
    record Ack(long exchange, int fromRank, Pass pass, int index) implements GradientMessage {
    }
}
