package io.kdapack.actors.cluster.parallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.actors.cluster.parallel.GradientMessage.Ack;
import io.kdapack.actors.cluster.parallel.GradientMessage.Chunk;
import io.kdapack.actors.cluster.parallel.GradientMessage.Pass;
import io.kdapack.training.StepResult;
import io.kdapack.training.StepTiming;
import java.io.NotSerializableException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * {@link ParallelSerializer}: the actors module's {@code reference.conf} binds every data-parallel message to it, each
 * one round-trips through both its byte-array and its byte-buffer form, and a chunk's floats keep their exact bits
 * (NaN payloads, −0, subnormals) and only the viewed regions of the sender's arrays are written, one after the other.
 */
class ParallelSerializerTest {
    private static final ActorTestKit KIT = ActorTestKit.create();

    @AfterAll
    static void stop() {
        KIT.shutdownTestKit();
    }

    private static Serializer serializer(Object message) {
        return SerializationExtension.get(Adapter.toClassic(KIT.system())).findSerializerFor(message);
    }

    @Test
    void everyMessageIsBoundToTheBinarySerializerAndRoundTrips() throws Exception {
        ActorRef<RankRunner.Command> runner = KIT.spawn(Behaviors.ignore(), "runner");
        ActorRef<GradientMessage> receiver = KIT.spawn(Behaviors.<GradientMessage>ignore(), "receiver");
        StepResult step = new StepResult(3, 2.5, 1.25, 1024, 17, 0.75, 1e-3, 12345.5, 2.0, null);
        List<Object> messages = List.of(
                new Ack(9, 1, Pass.BROADCAST, 41),
                new ControlMessage.Hello(1, receiver),
                new ControlMessage.Done(2),
                new RankRunner.Stop("asked by the user: ünïcode"),
                new RankEvent.Started("job-1", 0, 6),
                new RankEvent.StepDone("job-1", 1, step, new StepTiming(10, 20, 30, 40, 50)),
                new RankEvent.StepDone("job-1", 1, new StepResult(1, 0, null, 1, 0, 0, 0, 0), StepTiming.NONE),
                new RankEvent.CheckpointWritten("job-1", 0, 6, "/runs/a/step-00000006"),
                new RankEvent.Finished("job-1", 1, 8),
                new RankEvent.Failed("job-1", 1, 5, "rank 0 terminated"));
        for (Object message : messages) {
            assertEquals(message, roundTrip(message), message.toString());
        }
        RankRunner.Peers peers = new RankRunner.Peers(List.of(runner, runner));
        assertEquals(peers, roundTrip(peers));
        long[] values = {Long.MIN_VALUE, -1, 0, Double.doubleToRawLongBits(0.1)};
        ControlMessage.GatherPart part = (ControlMessage.GatherPart) roundTrip(new ControlMessage.GatherPart(4, 2, values));
        assertEquals(4, part.exchange());
        assertEquals(2, part.fromRank());
        assertArrayEquals(values, part.values());
        RankEvent.StepDone done = (RankEvent.StepDone) messages.get(5);
        assertEquals(done.result().toJson(), ((RankEvent.StepDone) roundTrip(done)).result().toJson());
    }

    @Test
    void aChunkWritesItsRegionsOnceWithExactBits() throws Exception {
        float[] gradient = new float[1000];
        for (int i = 0; i < gradient.length; i++) {
            gradient[i] = (float) Math.sin(i) * (i % 7 == 0 ? 1e-40f : 1f);
        }
        gradient[300] = Float.intBitsToFloat(0x7fc0_1234);
        gradient[301] = -0.0f;
        float[] other = {1.5f, -2.5f};
        Chunk chunk = new Chunk(77, 0, Pass.REDUCE, 5, List.of(new GradientMessage.Region(gradient, 256, 298),
                new GradientMessage.Region(other, 1, 1), new GradientMessage.Region(gradient, 999, 1)));
        Serializer serializer = serializer(chunk);
        assertInstanceOf(ParallelSerializer.class, serializer);
        byte[] bytes = serializer.toBinary(chunk);
        assertEquals(25 + 4 * 300, bytes.length, "a 25-byte header and the region's floats, nothing else");

        // The byte-buffer path Artery uses, into a big-endian buffer that already holds other bytes.
        ByteBuffer frame = ByteBuffer.allocate(8 + bytes.length).order(ByteOrder.BIG_ENDIAN);
        frame.putLong(42);
        ((ParallelSerializer) serializer).toBinary(chunk, frame);
        assertEquals(ByteOrder.BIG_ENDIAN, frame.order(), "the frame's byte order is left as it was");
        assertArrayEquals(bytes, Arrays.copyOfRange(frame.array(), 8, frame.position()));
        frame.flip().position(8);
        Chunk back = (Chunk) ((ParallelSerializer) serializer).fromBinary(frame, "C");
        assertEquals(1, back.regions().size(), "the receiver gets one array");
        assertEquals(0, back.regions().getFirst().offset());
        assertEquals(300, back.length());
        assertEquals(77, back.exchange());
        assertEquals(5, back.index());
        float[] expected = new float[300];
        System.arraycopy(gradient, 256, expected, 0, 298);
        expected[298] = -2.5f;
        expected[299] = gradient[999];
        float[] data = back.regions().getFirst().data();
        for (int i = 0; i < 300; i++) {
            assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(data[i]), "float " + i);
        }
        assertEquals(frame.limit(), frame.position(), "the reader consumed exactly the message");
    }

    @Test
    void unknownManifestsAndMessagesAreRefused() {
        ParallelSerializer serializer = (ParallelSerializer) serializer(new Ack(1, 0, Pass.REDUCE, 0));
        assertThrows(NotSerializableException.class, () -> serializer.fromBinary(new byte[0], "Z"));
        assertThrows(IllegalArgumentException.class, () -> serializer.manifest("a string"));
    }

    private static Object roundTrip(Object message) throws Exception {
        Serializer serializer = serializer(message);
        assertInstanceOf(ParallelSerializer.class, serializer, message.getClass().getName());
        ParallelSerializer parallel = (ParallelSerializer) serializer;
        String manifest = parallel.manifest(message);
        Object fromBytes = parallel.fromBinary(parallel.toBinary(message), manifest);
        ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
        parallel.toBinary(message, buffer);
        buffer.flip();
        Object fromBuffer = parallel.fromBinary(buffer, manifest);
        assertEquals(describe(fromBytes), describe(fromBuffer), message.toString());
        return fromBytes;
    }

    /** A message's fields, arrays by content. */
    private static String describe(Object message) {
        return message instanceof ControlMessage.GatherPart p
                ? p.exchange() + " " + p.fromRank() + " " + Arrays.toString(p.values()) : String.valueOf(message);
    }
}
