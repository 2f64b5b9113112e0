package io.kdapack.api.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.api.http.Route;
import io.kdapack.api.http.StrictJson;
import io.kdapack.training.pipeline.PipelineSettings;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The whole server on a loopback port with real HTTP clients; the training loop is a test double. */
class KdapackServerTest {

    private static final String TOKEN = "server-test-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(20);

    @TempDir
    Path temp;

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(WAIT).build();
    private final ScriptedJobFactory factory = new ScriptedJobFactory();
    private final List<KdapackServer> servers = new ArrayList<>();
    private URI base;

    private void startServer() throws Exception {
        ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, temp.resolve("token"), 64 * 1024, temp,
                Duration.ZERO, Duration.ofSeconds(10), 16,
                new PipelineSettings(2, Duration.ofSeconds(60), Duration.ofSeconds(60), Duration.ofSeconds(10)));
        KdapackServer server = KdapackServer.start(settings, TOKEN, factory);
        servers.add(server);
        base = URI.create("http://127.0.0.1:" + server.address().getPort());
    }

    @AfterEach
    void stop() {
        factory.gate.release(100_000);
        servers.forEach(KdapackServer::close);
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(base.resolve(path)).timeout(WAIT).header("Authorization", "Bearer " + TOKEN);
    }

    private HttpResponse<String> send(HttpRequest request) throws Exception {
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private String startJob(String config) throws Exception {
        HttpResponse<String> created = send(request("/v1/jobs").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(config)).build());
        assertEquals(201, created.statusCode(), created.body());
        return StrictJson.MAPPER.readTree(created.body()).get("id").asText();
    }

    private JsonNode status(String id) throws Exception {
        HttpResponse<String> response = send(request("/v1/jobs/" + id).build());
        assertEquals(200, response.statusCode(), response.body());
        return StrictJson.MAPPER.readTree(response.body());
    }

    /** Step ids and losses of an event stream up to its end event (or {@code limit} steps). */
    private record Stream_(List<Long> steps, List<Double> losses, String end) {
    }

    private static Stream_ read(Iterator<String> lines, int limit) throws Exception {
        List<Long> steps = new ArrayList<>();
        List<Double> losses = new ArrayList<>();
        String event = null;
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("event: ")) {
                event = line.substring(7);
            } else if (line.startsWith("data: ")) {
                JsonNode data = StrictJson.MAPPER.readTree(line.substring(6));
                if (event.equals("end")) {
                    return new Stream_(steps, losses, data.get("state").asText());
                }
                steps.add(data.get("step").asLong());
                losses.add(data.get("loss").asDouble());
                if (steps.size() == limit) {
                    return new Stream_(steps, losses, null);
                }
            }
        }
        return new Stream_(steps, losses, null);
    }

    private static List<Long> range(long first, long last) {
        List<Long> steps = new ArrayList<>();
        for (long s = first; s <= last; s++) {
            steps.add(s);
        }
        return steps;
    }

    @Test
    void twoHundredSubscribersEachReceiveEveryStepInOrder() throws Exception {
        startServer();
        int steps = 10;
        int subscribers = 200;
        String id = startJob("{\"steps\": " + steps + ", \"gated\": true}");
        CountDownLatch connected = new CountDownLatch(subscribers);
        List<Future<Stream_>> streams = new ArrayList<>();
        try (ExecutorService readers = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < subscribers; i++) {
                streams.add(readers.submit(() -> {
                    HttpResponse<Stream<String>> response = client.send(request("/v1/jobs/" + id + "/events").build(),
                            HttpResponse.BodyHandlers.ofLines());
                    assertEquals(200, response.statusCode());
                    connected.countDown();
                    try (Stream<String> lines = response.body()) {
                        return read(lines.iterator(), Integer.MAX_VALUE);
                    }
                }));
            }
            assertTrue(connected.await(WAIT.toSeconds(), TimeUnit.SECONDS), "all subscribers connected");
            factory.gate.release(steps); // the job runs while everyone listens
            for (Future<Stream_> stream : streams) {
                Stream_ received = stream.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                assertEquals(range(1, steps), received.steps());
                assertEquals("succeeded", received.end());
                for (int s = 0; s < steps; s++) {
                    assertEquals(ScriptedJobFactory.lossAt(s + 1), received.losses().get(s), "bit-identical loss");
                }
            }
        }
        JsonNode done = status(id);
        assertEquals("succeeded", done.get("state").asText());
        assertEquals(steps, done.get("step").asInt());
        assertEquals(ScriptedJobFactory.lossAt(steps), done.get("last_loss").asDouble());
    }

    @Test
    void lateAndReconnectingClientsMissNoStep() throws Exception {
        startServer();
        String id = startJob("{\"steps\": 12, \"gated\": true}");
        factory.gate.release(6);
        HttpResponse<Stream<String>> first = client.send(request("/v1/jobs/" + id + "/events").build(),
                HttpResponse.BodyHandlers.ofLines());
        Stream_ before;
        try (Stream<String> lines = first.body()) {
            before = read(lines.iterator(), 4); // then the client drops the connection
        }
        assertEquals(range(1, 4), before.steps());

        factory.gate.release(6);
        HttpResponse<Stream<String>> again = client.send(request("/v1/jobs/" + id + "/events")
                .header("Last-Event-ID", "4").build(), HttpResponse.BodyHandlers.ofLines());
        try (Stream<String> lines = again.body()) {
            Stream_ after = read(lines.iterator(), Integer.MAX_VALUE);
            assertEquals(range(5, 12), after.steps());
            assertEquals("succeeded", after.end());
        }
        HttpResponse<Stream<String>> late = client.send(request("/v1/jobs/" + id + "/events?from=10").build(),
                HttpResponse.BodyHandlers.ofLines());
        try (Stream<String> lines = late.body()) {
            assertEquals(range(10, 12), read(lines.iterator(), Integer.MAX_VALUE).steps());
        }
        HttpResponse<String> badFrom = send(request("/v1/jobs/" + id + "/events?from=ten").build());
        assertEquals(400, badFrom.statusCode());
        assertEquals("from", StrictJson.MAPPER.readTree(badFrom.body()).get("field").asText());
    }

    @Test
    void badRequestsAreRefusedAndTheServerStaysHealthy() throws Exception {
        startServer();
        HttpRequest health = HttpRequest.newBuilder(base.resolve("/healthz")).timeout(WAIT).build();
        List<HttpRequest> bad = List.of(
                HttpRequest.newBuilder(base.resolve("/v1/jobs")).timeout(WAIT).build(),
                request("/v1/jobs").setHeader("Authorization", "Bearer nope").build(),
                request("/v1/jobs").header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"steps\": ")).build(),
                request("/v1/jobs").header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(new byte[200 * 1024])).build(),
                request("/v1/steps").header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"job\": \"x\", \"tokens\": \"abc\"}")).build(),
                request("/v1/jobs/%2e%2e/resume").POST(HttpRequest.BodyPublishers.noBody()).build());
        List<Integer> expected = List.of(401, 401, 400, 413, 400, 400);
        for (int i = 0; i < bad.size(); i++) {
            HttpResponse<String> response;
            try {
                response = send(bad.get(i));
            } catch (java.io.IOException closedEarly) {
                // The server may close an oversized upload before the client finishes sending it.
                assertEquals(413, expected.get(i), closedEarly.toString());
                continue;
            }
            assertEquals(expected.get(i), response.statusCode(), response.body());
            JsonNode error = StrictJson.MAPPER.readTree(response.body());
            assertTrue(error.has("error") && error.has("field"), response.body());
            assertEquals(200, send(health).statusCode(), "still healthy after " + bad.get(i));
        }
    }

    /**
     * Tokens as long as the real one that differ from it in one byte (first, last), in case only, or in every byte;
     * and the real one cut short or extended by one byte. Each is refused on every endpoint but the health check, so
     * a check that compared lengths, prefixes or letters without case would fail here.
     */
    @Test
    void aWrongTokenOfTheRightLengthIsRefusedOnEveryEndpoint() throws Exception {
        startServer();
        String id = startJob("{\"steps\": 3, \"gated\": true}");
        List<String> wrongTokens = List.of(
                "X" + TOKEN.substring(1),
                TOKEN.substring(0, TOKEN.length() - 1) + "X",
                TOKEN.toUpperCase(java.util.Locale.ROOT),
                "x".repeat(TOKEN.length()),
                TOKEN.substring(0, TOKEN.length() - 1),
                TOKEN + "0");
        for (String wrong : wrongTokens) {
            for (Route route : Route.values()) {
                if (route == Route.HEALTH || route == Route.DASHBOARD || route == Route.DASHBOARD_ASSET) {
                    continue; // open: no token asked (the dashboard holds no data)
                }
                HttpRequest request = endpointRequest(route, id).setHeader("Authorization", "Bearer " + wrong).build();
                HttpResponse<String> response = send(request);
                assertEquals(401, response.statusCode(), route + " with token '" + wrong + "': " + response.body());
                assertEquals("Bearer", response.headers().firstValue("WWW-Authenticate").orElse(null));
                JsonNode error = StrictJson.MAPPER.readTree(response.body());
                assertEquals("invalid bearer token", error.get("error").asText());
                assertEquals("Authorization", error.get("field").asText());
            }
        }
        // Nothing got through: one job, still running at step 0, not cancelled; no second job was created.
        JsonNode jobs = StrictJson.MAPPER.readTree(send(request("/v1/jobs").build()).body()).get("jobs");
        assertEquals(1, jobs.size(), jobs::toString);
        assertEquals("running", status(id).get("state").asText());
        assertEquals(0, status(id).get("step").asInt());
        // The real token opens the same request (the refusals were for the token, not the request).
        HttpResponse<String> cancelled = send(endpointRequest(Route.CANCEL_JOB, id).build());
        assertEquals(202, cancelled.statusCode(), cancelled.body());
    }

    /** A request for {@code route} with the real token; {@code id} fills a path's job id. */
    private HttpRequest.Builder endpointRequest(Route route, String id) {
        String path = switch (route) {
            case HEALTH -> "/healthz";
            case METRICS -> "/metrics";
            case OPENAPI -> "/openapi.yaml";
            case LIST_JOBS, CREATE_JOB -> "/v1/jobs";
            case GET_JOB, CANCEL_JOB -> "/v1/jobs/" + id;
            case RESUME_JOB -> "/v1/jobs/" + id + "/resume";
            case JOB_EVENTS -> "/v1/jobs/" + id + "/events";
            case STEPS -> "/v1/steps";
            case COMPLETIONS -> "/v1/completions";
            case MODELS -> "/v1/models";
            case DASHBOARD -> "/";
            case DASHBOARD_ASSET -> "/ui/app.js";
            case CLUSTER -> "/v1/cluster";
        };
        HttpRequest.BodyPublisher body = HttpRequest.BodyPublishers.ofString(switch (route) {
            case CREATE_JOB -> "{\"steps\": 1}";
            case STEPS -> "{\"job\": \"" + id + "\", \"tokens\": [[1]], \"labels\": [[1]], \"loss_mask\": [[1]], "
                    + "\"segment_ids\": [[1]], \"position_ids\": [[0]]}";
            default -> "";
        });
        HttpRequest.Builder request = request(path).header("Content-Type", "application/json");
        return switch (route) {
            case CREATE_JOB, RESUME_JOB, STEPS -> request.POST(body);
            case CANCEL_JOB -> request.DELETE();
            default -> request.GET();
        };
    }

    @Test
    void shutdownCheckpointsTheRunningJobAndAResumedRunContinuesFromIt() throws Exception {
        startServer();
        String id = startJob("{\"steps\": 8, \"gated\": true}");
        factory.gate.release(3);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (status(id).get("step").asInt() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(3, status(id).get("step").asInt());

        KdapackServer first = servers.removeFirst();
        Thread closing = Thread.ofPlatform().start(first::close); // SIGTERM's shutdown hook does this
        // Once the shutdown is under way new jobs are refused; step 4 (in progress) may then finish.
        while (true) {
            HttpResponse<String> refused = send(request("/v1/jobs").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"steps\": 1}")).build());
            if (refused.statusCode() == 409) {
                assertTrue(refused.body().contains("shutting down"), refused.body());
                break;
            }
            assertTrue(System.nanoTime() < deadline, "shutdown never started refusing jobs");
        }
        factory.gate.release(1);
        while (factory.checkpoints.get(id).isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "no checkpoint after the step in progress");
            Thread.sleep(10);
        }
        // The stopped run's loader may be prefetching past step 4: let it finish so the actors can stop.
        factory.gate.release(10);
        closing.join(WAIT.toMillis());
        assertEquals(List.of(4L), factory.checkpoints.get(id), "checkpoint after the step in progress");
        factory.gate.drainPermits();

        startServer();
        HttpResponse<String> resumed = send(request("/v1/jobs/" + id + "/resume")
                .POST(HttpRequest.BodyPublishers.noBody()).build());
        assertEquals(202, resumed.statusCode(), resumed.body());
        // The 202 shows the step the run resumes from, before the model stage has restored it.
        assertEquals(4, StrictJson.MAPPER.readTree(resumed.body()).get("step").asInt(), resumed.body());
        factory.gate.release(4);
        HttpResponse<Stream<String>> events = client.send(request("/v1/jobs/" + id + "/events").build(),
                HttpResponse.BodyHandlers.ofLines());
        try (Stream<String> lines = events.body()) {
            Stream_ rest = read(lines.iterator(), Integer.MAX_VALUE);
            assertEquals(range(5, 8), rest.steps());
            for (int i = 0; i < 4; i++) {
                assertEquals(ScriptedJobFactory.lossAt(5 + i), rest.losses().get(i));
            }
            assertEquals("succeeded", rest.end());
        }
    }
}
