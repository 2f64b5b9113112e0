package io.kdapack.actors.cluster.parallel;

import io.kdapack.actors.cluster.parallel.GradientMessage.Ack;
import io.kdapack.actors.cluster.parallel.GradientMessage.Chunk;
import io.kdapack.actors.cluster.parallel.GradientMessage.Pass;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.parallel.ExchangeStats;
import io.kdapack.training.parallel.GradientExchange;
import io.kdapack.training.parallel.GradientExchangeException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The {@link GradientExchange} of ranks that are actors on the cluster's members, called on the rank's training thread
 * (it blocks there); the {@link RankRunner} and its chunk receiver put what peers send into {@code inbox}.
 *
 * <p><b>All-gather</b>: each rank sends its part to every other rank's runner ({@code N − 1} small messages).
 *
 * <p><b>Gradient sum</b>, in two pipelined passes over the gradient cut into chunks (the parameters' gradients end to
 * end in parameter order, cut every {@code chunkFloats} floats):
 * <ol>
 *   <li><i>Reduce</i> up the chain {@code 0 → 1 → … → N−1}: rank 0 sends its chunk; rank r adds the partial sum it
 *       receives to its own gradient in place, {@code g_r ← p_{r−1} + g_r}, and sends that on. Chunk by chunk, rank
 *       {@code N−1} then holds {@code ((g_0 + g_1) + …) + g_{N−1}}: the fixed order of {@code Trainer}'s block sums.</li>
 *   <li><i>Broadcast</i> of the result along {@code N−1 → 0 → 1 → … → N−2}: each copies it into its gradient and
 *       passes it on.</li>
 * </ol>
 * Every link carries at most {@code window} unacknowledged chunks; a receiver acknowledges a chunk once it has added
 * or copied it. So a rank holds at most {@code 2 · window} received chunks whatever the model size, a sender's
 * region is read (by the serializer) before the receiver's acknowledgement comes back, and each rank sends and receives
 * about {@code 2 · 4 · parameters} bytes per step whatever N (rank 0 and N−1 a little less). The operation returns once
 * this rank holds the whole result and all it sent is acknowledged.
 *
 * <p>Messages are matched to an operation by its sequence number; those of a later operation (a peer may be one
 * ahead) wait in a list, bounded by the same windows.
 */
final class PekkoGradientExchange implements GradientExchange {
    private final int rank;
    private final int ranks;
    private final List<ActorRef<RankRunner.Command>> runners;
    private final List<ActorRef<GradientMessage>> receivers;
    private final BlockingQueue<Object> inbox;
    private final ExchangeSettings settings;
    /** Messages taken from the inbox that belong to a later operation. */
    private final List<Object> early = new ArrayList<>();
    private long sequence;
    /** Gradient bytes of the sum under way. */
    private long bytesSent;
    private long bytesReceived;

    /**
     * @param runners   the N ranks' runners, in rank order
     * @param receivers the N ranks' chunk receivers, in rank order
     * @param inbox     where this rank's runner and receiver put what arrives ({@link ControlMessage.GatherPart},
     *                  {@link GradientMessage}, {@link Interruption})
     */
    PekkoGradientExchange(int rank, List<ActorRef<RankRunner.Command>> runners, List<ActorRef<GradientMessage>> receivers,
                          BlockingQueue<Object> inbox, ExchangeSettings settings) {
        this.rank = rank;
        this.ranks = runners.size();
        this.runners = List.copyOf(runners);
        this.receivers = List.copyOf(receivers);
        this.inbox = inbox;
        this.settings = settings;
    }

    /** Put in the inbox to end the operation under way (and every later one) with {@code reason}. */
    record Interruption(String reason) {
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int ranks() {
        return ranks;
    }

    @Override
    public long[][] allGather(long[] local) {
        long op = ++sequence;
        for (int r = 0; r < ranks; r++) {
            if (r != rank) {
                runners.get(r).tell(new ControlMessage.GatherPart(op, rank, local.clone()));
            }
        }
        long[][] out = new long[ranks][];
        out[rank] = local.clone();
        for (int received = 1; received < ranks; received++) {
            ControlMessage.GatherPart part = (ControlMessage.GatherPart) next(op, m -> m instanceof ControlMessage.GatherPart,
                    "its part of all-gather " + op);
            if (out[part.fromRank()] != null) {
                throw new GradientExchangeException("rank " + rank + ": rank " + part.fromRank() + " sent its part of "
                        + "all-gather " + op + " twice");
            }
            out[part.fromRank()] = part.values();
        }
        return out;
    }

    @Override
    public ExchangeStats sumGradients(List<Parameter> parameters) {
        long start = System.nanoTime();
        bytesSent = 0;
        bytesReceived = 0;
        List<List<Segment>> pieces = pieces(parameters, settings.chunkFloats());
        // Every rank ready (the time the slowest rank's compute costs this one), and the same cut on every rank.
        long[][] counts = allGather(new long[] {pieces.size()});
        for (int r = 0; r < ranks; r++) {
            if (counts[r][0] != pieces.size()) {
                throw new GradientExchangeException("rank " + rank + " cuts its gradient into " + pieces.size()
                        + " chunks, rank " + r + " into " + counts[r][0] + ": the ranks train different models");
            }
        }
        long ready = System.nanoTime();
        long op = ++sequence;
        new Exchange(op, parameters, pieces).run();
        return new ExchangeStats(bytesSent, bytesReceived, ready - start, System.nanoTime() - ready);
    }

    /** Floats {@code [offset, offset + length)} of parameter {@code parameter}'s gradient: part of a chunk. */
    private record Segment(int parameter, int offset, int length) {
    }

    /**
     * The chunks of a gradient: the parameters' gradients laid end to end in parameter order and cut every
     * {@code chunkFloats} floats, each chunk as the segments of the parameters it covers.
     */
    private static List<List<Segment>> pieces(List<Parameter> parameters, int chunkFloats) {
        List<List<Segment>> out = new ArrayList<>();
        List<Segment> current = new ArrayList<>();
        int room = chunkFloats;
        for (int p = 0; p < parameters.size(); p++) {
            int size = parameters.get(p).size();
            for (int offset = 0; offset < size; ) {
                int take = Math.min(room, size - offset);
                current.add(new Segment(p, offset, take));
                offset += take;
                room -= take;
                if (room == 0) {
                    out.add(List.copyOf(current));
                    current.clear();
                    room = chunkFloats;
                }
            }
        }
        if (!current.isEmpty()) {
            out.add(List.copyOf(current));
        }
        return out;
    }

    private static int floats(List<Segment> piece) {
        int n = 0;
        for (Segment s : piece) {
            n += s.length();
        }
        return n;
    }

    /** The two passes of one gradient sum, on this rank. */
    private final class Exchange {
        final long op;
        final List<Parameter> parameters;
        final List<List<Segment>> pieces;
        final int total;
        /** Reduce chain neighbours (−1: none). */
        final int up = rank - 1;
        final int down = rank + 1 < ranks ? rank + 1 : -1;
        /** Broadcast chain N−1 → 0 → 1 → … → N−2 (−1: none). */
        final int broadcastUp = rank == ranks - 1 ? -1 : rank == 0 ? ranks - 1 : rank - 1;
        final int broadcastDown = rank == ranks - 2 ? -1 : rank == ranks - 1 ? 0 : rank + 1;
        /** Chunks whose reduce value (own gradient, or partial sum added) is ready here, in order. */
        int reduced;
        int reduceSent;
        int reduceAcked;
        /** Chunks of the result held here, in order. */
        int finished;
        int broadcastSent;
        int broadcastAcked;
        final Map<Integer, Chunk> pendingReduce = new HashMap<>();
        final Map<Integer, Chunk> pendingBroadcast = new HashMap<>();

        Exchange(long op, List<Parameter> parameters, List<List<Segment>> pieces) {
            this.op = op;
            this.parameters = parameters;
            this.pieces = pieces;
            this.total = pieces.size();
            this.reduced = rank == 0 ? total : 0;
            this.finished = rank == ranks - 1 ? reduced : 0;
        }

        void run() {
            while (true) {
                send();
                boolean done = finished == total && (down < 0 || reduceAcked == total)
                        && (broadcastDown < 0 || broadcastAcked == total);
                if (done) {
                    return;
                }
                Object message = next(op, m -> m instanceof GradientMessage, "gradient chunks of exchange " + op);
                switch (message) {
                    case Chunk c when c.pass() == Pass.REDUCE && c.fromRank() == up -> {
                        pendingReduce.put(c.index(), c);
                        applyReduce();
                    }
                    case Chunk c when c.pass() == Pass.BROADCAST && c.fromRank() == broadcastUp -> {
                        pendingBroadcast.put(c.index(), c);
                        applyBroadcast();
                    }
                    case Ack a when a.pass() == Pass.REDUCE && a.fromRank() == down -> reduceAcked++;
                    case Ack a when a.pass() == Pass.BROADCAST && a.fromRank() == broadcastDown -> broadcastAcked++;
                    default -> throw new GradientExchangeException("rank " + rank + ": unexpected " + message
                            + " in exchange " + op);
                }
            }
        }

        /** Sends what the windows allow: partial sums up the chain, results along the broadcast chain. */
        void send() {
            while (down >= 0 && reduceSent < reduced && reduceSent - reduceAcked < settings.window()) {
                sendChunk(down, Pass.REDUCE, reduceSent++);
            }
            while (broadcastDown >= 0 && broadcastSent < finished && broadcastSent - broadcastAcked < settings.window()) {
                sendChunk(broadcastDown, Pass.BROADCAST, broadcastSent++);
            }
        }

        void sendChunk(int to, Pass pass, int index) {
            List<GradientMessage.Region> regions = new ArrayList<>();
            for (Segment s : pieces.get(index)) {
                regions.add(new GradientMessage.Region(parameters.get(s.parameter()).grads(), s.offset(), s.length()));
            }
            Chunk chunk = new Chunk(op, rank, pass, index, regions);
            receivers.get(to).tell(chunk);
            bytesSent += 4L * chunk.length();
        }

        /** {@code g_r ← p_{r−1} + g_r} for the next chunks in order. */
        void applyReduce() {
            for (Chunk c = pendingReduce.remove(reduced); c != null; c = pendingReduce.remove(reduced)) {
                GradientMessage.Region in = single(c);
                int cursor = in.offset();
                for (Segment s : pieces.get(c.index())) {
                    float[] g = parameters.get(s.parameter()).grads();
                    for (int i = 0; i < s.length(); i++) {
                        g[s.offset() + i] = in.data()[cursor + i] + g[s.offset() + i];
                    }
                    cursor += s.length();
                }
                receive(c);
                reduced++;
                if (rank == ranks - 1) {
                    finished = reduced;
                }
            }
        }

        /** The result, copied in, for the next chunks in order. */
        void applyBroadcast() {
            for (Chunk c = pendingBroadcast.remove(finished); c != null; c = pendingBroadcast.remove(finished)) {
                GradientMessage.Region in = single(c);
                int cursor = in.offset();
                for (Segment s : pieces.get(c.index())) {
                    System.arraycopy(in.data(), cursor, parameters.get(s.parameter()).grads(), s.offset(), s.length());
                    cursor += s.length();
                }
                receive(c);
                finished++;
            }
        }

        /**
         * A received chunk's floats as one region (a serialized chunk has one; one delivered within this JVM keeps
         * the sender's regions, which are then copied once here).
         */
        GradientMessage.Region single(Chunk c) {
            if (c.index() < 0 || c.index() >= total || floats(pieces.get(c.index())) != c.length()) {
                throw new GradientExchangeException("rank " + rank + ": chunk " + c.index() + " of " + c.length()
                        + " floats from rank " + c.fromRank() + " does not fit this rank's " + total + " chunks");
            }
            if (c.regions().size() == 1) {
                return c.regions().getFirst();
            }
            float[] joined = new float[c.length()];
            int cursor = 0;
            for (GradientMessage.Region r : c.regions()) {
                System.arraycopy(r.data(), r.offset(), joined, cursor, r.length());
                cursor += r.length();
            }
            return new GradientMessage.Region(joined, 0, joined.length);
        }

        void receive(Chunk c) {
            bytesReceived += 4L * c.length();
            receivers.get(c.fromRank()).tell(new Ack(op, rank, c.pass(), c.index()));
        }
    }

    /**
     * The next message of operation {@code op} that {@code wanted} accepts: from those that arrived early, else from
     * the inbox (others of a later operation are kept for it).
     *
     * @throws GradientExchangeException after {@code settings.timeout()} without one, or on an {@link Interruption}
     */
    private Object next(long op, Predicate<Object> wanted, String what) {
        for (Iterator<Object> it = early.iterator(); it.hasNext(); ) {
            Object m = it.next();
            if (operationOf(m) == op && wanted.test(m)) {
                it.remove();
                return m;
            }
        }
        long deadline = System.nanoTime() + settings.timeout().toNanos();
        while (true) {
            Object m;
            try {
                m = inbox.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new GradientExchangeException("rank " + rank + " was interrupted waiting for " + what, e);
            }
            if (m == null) {
                throw new GradientExchangeException("rank " + rank + " of " + ranks + " waited " + settings.timeout()
                        + " (kdapack.parallel.timeout) for " + what + " from its peers");
            }
            if (m instanceof Interruption interruption) {
                inbox.add(interruption);
                throw new GradientExchangeException("rank " + rank + ": " + interruption.reason());
            }
            long of = operationOf(m);
            if (of == op && wanted.test(m)) {
                return m;
            }
            if (of < op) {
                throw new GradientExchangeException("rank " + rank + ": " + m + " of finished operation " + of
                        + " arrived during operation " + op);
            }
            early.add(m);
        }
    }

    private static long operationOf(Object message) {
        return switch (message) {
            case ControlMessage.GatherPart p -> p.exchange();
            case GradientMessage g -> g.exchange();
            default -> throw new IllegalArgumentException("not an exchange message: " + message);
        };
    }
}
