package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.bench.server.SseSubscribers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * 200 concurrent SSE subscribers (real HTTP connections, one NIO client thread) follow a real training job: every
 * one receives every step event, ids consecutive from 1, then the end event, and all receive the same bytes.
 */
class ManySubscribersTest {
    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");
    private static final int SUBSCRIBERS = 200;
    private static final int STEPS = 30;

    @TempDir
    Path temp;

    @Test
    void twoHundredSubscribersEachReceiveEveryStepThenTheEnd() throws Exception {
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), temp.resolve("jobs"))) {
            String id = server.startJob(TrainingServer.tinyConfig(STEPS, "mqar/mqar-train"));
            List<SseSubscribers.Stream> streams;
            try (SseSubscribers subscribers = SseSubscribers.connect(server.address(), TrainingServer.TOKEN, id,
                    SUBSCRIBERS, Duration.ZERO)) {
                subscribers.awaitConnected(TrainingServer.WAIT);
                streams = subscribers.awaitEnd(TrainingServer.WAIT);
            }
            TrainingServer.Events reference = server.follow(id, Integer.MAX_VALUE);
            assertEquals("succeeded", reference.end());
            assertEquals(STEPS, reference.steps().size());

            assertEquals(SUBSCRIBERS, streams.size());
            for (SseSubscribers.Stream stream : streams) {
                assertTrue(stream.complete(STEPS), "steps 1.." + STEPS + " in order, then the end: " + stream);
            }
            assertEquals(1, streams.stream().mapToLong(SseSubscribers.Stream::crc).distinct().count(),
                    "every subscriber received the same events");
            assertEquals(200, server.send(server.request("/healthz").build()).statusCode());
        }
    }
}
