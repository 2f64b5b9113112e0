package io.kdapack.actors.cluster.parallel;

import io.kdapack.actors.cluster.parallel.GradientMessage.Ack;
import io.kdapack.actors.cluster.parallel.GradientMessage.Chunk;
import io.kdapack.actors.cluster.parallel.GradientMessage.Pass;
import io.kdapack.training.StepResult;
import io.kdapack.training.StepTiming;
import java.io.NotSerializableException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.ByteBufferSerializer;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * The binary form of every {@link ParallelMessage}, little-endian, with a one- or two-letter manifest per type.
 *
 * <p>A gradient {@link Chunk} is a 25-byte header ({@code exchange} i64, {@code fromRank} i32, pass u8, {@code index}
 * i32, {@code length} i32, 4 bytes reserved) then {@code length} floats. Artery hands this serializer its envelope
 * buffer ({@link ByteBufferSerializer}), so the floats go from the sender's gradient buffers straight into the frame
 * (one copy) and from the frame straight into the receiver's new array (one copy); nothing is boxed and nothing goes
 * through Java serialization. Actor references are written in {@link ActorRefResolver}'s string form.
 */
public final class ParallelSerializer extends SerializerWithStringManifest implements ByteBufferSerializer {
    /** This serializer's id in {@code pekko.actor.serializers} (unique in the cluster; Pekko keeps 0–40 for itself). */
    public static final int IDENTIFIER = 731_301;

    private static final int CHUNK_HEADER = 8 + 4 + 1 + 4 + 4 + 4;

    private final ExtendedActorSystem system;
    private volatile ActorRefResolver resolver;

    public ParallelSerializer(ExtendedActorSystem system) {
        this.system = system;
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    public String manifest(Object o) {
        return switch (o) {
            case Chunk c -> "C";
            case Ack a -> "A";
            case ControlMessage.GatherPart g -> "G";
            case ControlMessage.Hello h -> "H";
            case ControlMessage.Done d -> "D";
            case RankRunner.Peers p -> "P";
            case RankRunner.Stop s -> "S";
            case RankEvent.Started e -> "E0";
            case RankEvent.StepDone e -> "E1";
            case RankEvent.CheckpointWritten e -> "E2";
            case RankEvent.Finished e -> "E3";
            case RankEvent.Failed e -> "E4";
            default -> throw new IllegalArgumentException("not a data-parallel message: " + o.getClass().getName());
        };
    }

    @Override
    public byte[] toBinary(Object o) {
        ByteBuffer buffer = ByteBuffer.allocate(sizeBound(o));
        toBinary(o, buffer);
        return Arrays.copyOf(buffer.array(), buffer.position());
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
        return fromBinary(ByteBuffer.wrap(bytes), manifest);
    }

    @Override
    public void toBinary(Object o, ByteBuffer buffer) {
        ByteOrder order = buffer.order();
        buffer.order(ByteOrder.LITTLE_ENDIAN);
        try {
            write(o, buffer);
        } finally {
            buffer.order(order);
        }
    }

    @Override
    public Object fromBinary(ByteBuffer buffer, String manifest) throws NotSerializableException {
        ByteOrder order = buffer.order();
        buffer.order(ByteOrder.LITTLE_ENDIAN);
        try {
            return read(buffer, manifest);
        } finally {
            buffer.order(order);
        }
    }

    private void write(Object o, ByteBuffer b) {
        switch (o) {
            case Chunk c -> {
                b.putLong(c.exchange()).putInt(c.fromRank()).put((byte) c.pass().ordinal()).putInt(c.index())
                        .putInt(c.length()).putInt(0);
                for (GradientMessage.Region r : c.regions()) {
                    b.asFloatBuffer().put(r.data(), r.offset(), r.length());
                    b.position(b.position() + 4 * r.length());
                }
            }
            case Ack a -> b.putLong(a.exchange()).putInt(a.fromRank()).put((byte) a.pass().ordinal()).putInt(a.index());
            case ControlMessage.GatherPart g -> {
                b.putLong(g.exchange()).putInt(g.fromRank()).putInt(g.values().length);
                b.asLongBuffer().put(g.values());
                b.position(b.position() + 8 * g.values().length);
            }
            case ControlMessage.Hello h -> {
                b.putInt(h.fromRank());
                putString(b, resolver().toSerializationFormat(h.gradients()));
            }
            case RankRunner.Peers p -> {
                b.putInt(p.ranks().size());
                for (ActorRef<RankRunner.Command> ref : p.ranks()) {
                    putString(b, resolver().toSerializationFormat(ref));
                }
            }
            case RankRunner.Stop s -> putString(b, s.reason());
            case ControlMessage.Done d -> b.putInt(d.fromRank());
            case RankEvent.Started e -> {
                head(b, e);
                b.putLong(e.fromStep());
            }
            case RankEvent.StepDone e -> {
                head(b, e);
                StepResult r = e.result();
                b.putLong(r.step()).putDouble(r.loss());
                putNullable(b, r.mtpLoss());
                b.putLong(r.tokens()).putLong(r.segments()).putDouble(r.gradNorm()).putDouble(r.lr())
                        .putDouble(r.tokensPerS());
                putNullable(b, r.valLoss());
                putNullable(b, r.valMtpLoss());
                StepTiming t = e.timing();
                b.putLong(t.computeNanos()).putLong(t.waitNanos()).putLong(t.exchangeNanos()).putLong(t.bytesSent())
                        .putLong(t.bytesReceived());
            }
            case RankEvent.CheckpointWritten e -> {
                head(b, e);
                b.putLong(e.step());
                putString(b, e.path());
            }
            case RankEvent.Finished e -> {
                head(b, e);
                b.putLong(e.steps());
            }
            case RankEvent.Failed e -> {
                head(b, e);
                b.putLong(e.stepsDone());
                putString(b, e.reason());
            }
            default -> throw new IllegalArgumentException("not a data-parallel message: " + o.getClass().getName());
        }
    }

    private Object read(ByteBuffer b, String manifest) throws NotSerializableException {
        switch (manifest) {
            case "C" -> {
                long exchange = b.getLong();
                int from = b.getInt();
                Pass pass = Pass.values()[b.get()];
                int index = b.getInt();
                int length = b.getInt();
                b.getInt();
                float[] data = new float[length];
                b.asFloatBuffer().get(data);
                b.position(b.position() + 4 * length);
                return new Chunk(exchange, from, pass, index, List.of(new GradientMessage.Region(data, 0, length)));
            }
            case "A" -> {
                return new Ack(b.getLong(), b.getInt(), Pass.values()[b.get()], b.getInt());
            }
            case "G" -> {
                long exchange = b.getLong();
                int from = b.getInt();
                long[] values = new long[b.getInt()];
                b.asLongBuffer().get(values);
                b.position(b.position() + 8 * values.length);
                return new ControlMessage.GatherPart(exchange, from, values);
            }
            case "H" -> {
                int from = b.getInt();
                return new ControlMessage.Hello(from, resolver().resolveActorRef(getString(b)));
            }
            case "P" -> {
                int n = b.getInt();
                List<ActorRef<RankRunner.Command>> refs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    refs.add(resolver().resolveActorRef(getString(b)));
                }
                return new RankRunner.Peers(refs);
            }
            case "S" -> {
                return new RankRunner.Stop(getString(b));
            }
            case "D" -> {
                return new ControlMessage.Done(b.getInt());
            }
            case "E0" -> {
                return new RankEvent.Started(getString(b), b.getInt(), b.getLong());
            }
            case "E1" -> {
                String job = getString(b);
                int rank = b.getInt();
                StepResult r = new StepResult(b.getLong(), b.getDouble(), getNullable(b), b.getLong(), b.getLong(),
                        b.getDouble(), b.getDouble(), b.getDouble(), getNullable(b), getNullable(b));
                StepTiming t = new StepTiming(b.getLong(), b.getLong(), b.getLong(), b.getLong(), b.getLong());
                return new RankEvent.StepDone(job, rank, r, t);
            }
            case "E2" -> {
                return new RankEvent.CheckpointWritten(getString(b), b.getInt(), b.getLong(), getString(b));
            }
            case "E3" -> {
                return new RankEvent.Finished(getString(b), b.getInt(), b.getLong());
            }
            case "E4" -> {
                return new RankEvent.Failed(getString(b), b.getInt(), b.getLong(), getString(b));
            }
            default -> throw new NotSerializableException("unknown data-parallel manifest '" + manifest + "'");
        }
    }

    /** An upper bound of {@code o}'s binary size. */
    private int sizeBound(Object o) {
        return switch (o) {
            case Chunk c -> CHUNK_HEADER + 4 * c.length();
            case ControlMessage.GatherPart g -> 16 + 8 * g.values().length;
            case RankRunner.Peers p -> 4 + p.ranks().stream()
                    .mapToInt(r -> 4 + 3 * resolver().toSerializationFormat(r).length()).sum();
            case ControlMessage.Hello h -> 8 + 3 * resolver().toSerializationFormat(h.gradients()).length();
            case RankRunner.Stop s -> 4 + 3 * s.reason().length();
            case RankEvent.CheckpointWritten e -> 32 + 3 * (e.jobId().length() + e.path().length());
            case RankEvent.Failed e -> 32 + 3 * (e.jobId().length() + e.reason().length());
            case RankEvent e -> 160 + 3 * e.jobId().length();
            default -> 32;
        };
    }

    private static void head(ByteBuffer b, RankEvent e) {
        putString(b, e.jobId());
        b.putInt(e.rank());
    }

    private static void putString(ByteBuffer b, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        b.putInt(bytes.length).put(bytes);
    }

    private static String getString(ByteBuffer b) {
        byte[] bytes = new byte[b.getInt()];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** A nullable double: a presence byte, then the raw bits when present. */
    private static void putNullable(ByteBuffer b, Double value) {
        b.put((byte) (value == null ? 0 : 1));
        if (value != null) {
            b.putDouble(value);
        }
    }

    private static Double getNullable(ByteBuffer b) {
        return b.get() == 0 ? null : b.getDouble();
    }

    private ActorRefResolver resolver() {
        ActorRefResolver r = resolver;
        if (r == null) {
            r = ActorRefResolver.get(Adapter.toTyped(system));
            resolver = r;
        }
        return r;
    }
}
