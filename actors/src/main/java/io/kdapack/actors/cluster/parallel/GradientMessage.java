package io.kdapack.actors.cluster.parallel;

import java.util.List;

/** What travels on the large-message lane to a rank's {@code kdapack-gradients} child: chunks and their acknowledgements. */
sealed interface GradientMessage extends ParallelMessage {

    /** The exchange (collective operation number) this belongs to. */
    long exchange();

    /** The rank that sent it. */
    int fromRank();

    /** Which pass of {@link PekkoGradientExchange#sumGradients}: the partial sums going up the chain, or the result. */
    enum Pass { REDUCE, BROADCAST }

    /**
     * Gradient chunk {@code index} of the exchange: the floats of {@code regions}, one after the other (a chunk runs on
     * across parameter boundaries, so a small parameter does not cost a message of its own). On the sender the regions
     * are views of the rank's gradient buffers (no copy; the sender leaves them alone until the chunk is acknowledged);
     * {@link ParallelSerializer} writes them straight into Artery's buffer and the receiver gets one region of its own.
     */
    record Chunk(long exchange, int fromRank, Pass pass, int index, List<Region> regions) implements GradientMessage {

        public Chunk {
            regions = List.copyOf(regions);
        }

        /** Floats in the chunk. */
        public int length() {
            int n = 0;
            for (Region r : regions) {
                n += r.length();
            }
            return n;
        }
    }

    /** Floats {@code [offset, offset + length)} of {@code data}. */
    record Region(float[] data, int offset, int length) {
    }

    /** Chunk {@code index} of {@code pass} was consumed: the sender may send one more on that link. */
    record Ack(long exchange, int fromRank, Pass pass, int index) implements GradientMessage {
    }
}
