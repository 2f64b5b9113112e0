package io.kdapack.api.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.api.http.CompletionHandler;
import io.kdapack.api.http.StrictJson;
import io.kdapack.config.ConfigLoader;
import io.kdapack.inference.Generation;
import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.SamplingParams;
import io.kdapack.inference.ServedModel;
import io.kdapack.tokenizers.Tokenizers;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.pipeline.PipelineSettings;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code /v1/completions} naming a running job: the job's live weights as of a step boundary, compared bit for bit
 * (greedy token ids and logprobs) with the model loaded from the job's checkpoint of the step the answer reports.
 */
class LiveCompletionsServerTest {
    private static final String TOKEN = "live-completions-test-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int[] PROMPT = {1, 2, 3, 250, 17};
    private static final int MAX_TOKENS = 12;
    /** Short: a snapshot asked just as the job ends gets no answer and waits this long before the checkpoint serves. */
    private static final Duration ASK_TIMEOUT = Duration.ofSeconds(3);
    private static final String LIVE_BYTES = "kdapack_inference_live_weight_bytes";

    @TempDir
    Path temp;

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(WAIT).build();
    private KdapackServer server;
    private LiveJobFactory factory;
    private URI base;

    private void startServer() throws Exception {
        factory = new LiveJobFactory(temp);
        ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, temp.resolve("token"), 64 * 1024, temp,
                Duration.ZERO, ASK_TIMEOUT, 16,
                new PipelineSettings(2, Duration.ofSeconds(60), Duration.ofSeconds(60), Duration.ofSeconds(10)));
        server = KdapackServer.start(settings, TOKEN, factory, InferenceLimits.defaults(), temp.resolve("jobs"));
        base = URI.create("http://127.0.0.1:" + server.address().getPort());
    }

    @AfterEach
    void stop() {
        if (server != null) {
            factory.gate.release(1000); // let a gated job reach a step boundary so the server can stop it
            server.close();
        }
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path)).timeout(WAIT)
                .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json");
        request.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body));
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> complete(String model, int maxTokens, boolean stream) throws Exception {
        return client.send(completion(model, maxTokens, stream), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest completion(String model, int maxTokens, boolean stream) {
        ObjectNode body = StrictJson.MAPPER.createObjectNode();
        body.put("model", model);
        body.set("prompt", StrictJson.MAPPER.valueToTree(PROMPT));
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("stream", stream);
        body.put("logprobs", 0);
        return HttpRequest.newBuilder(base.resolve("/v1/completions")).timeout(WAIT)
                .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
    }

    /** {@code response} (whose body was read as a stream) with {@code body} as its text. */
    private static HttpResponse<String> withBody(HttpResponse<?> response, String body) {
        return new HttpResponse<>() {
            @Override
            public int statusCode() {
                return response.statusCode();
            }

            @Override
            public HttpRequest request() {
                return response.request();
            }

            @Override
            public java.util.Optional<HttpResponse<String>> previousResponse() {
                return java.util.Optional.empty();
            }

            @Override
            public java.net.http.HttpHeaders headers() {
                return response.headers();
            }

            @Override
            public String body() {
                return body;
            }

            @Override
            public java.util.Optional<javax.net.ssl.SSLSession> sslSession() {
                return response.sslSession();
            }

            @Override
            public URI uri() {
                return response.uri();
            }

            @Override
            public HttpClient.Version version() {
                return response.version();
            }
        };
    }

    /** A greedy answer: its token ids and logprobs as text, and the step of the weights that served it (-1: none). */
    private record Answer(String tokens, long weightsStep) {
    }

    private static Answer answer(HttpResponse<String> response, boolean stream) throws Exception {
        assertEquals(200, response.statusCode(), response.body());
        List<JsonNode> bodies = new ArrayList<>();
        if (stream) {
            String[] events = response.body().split("\n\n");
            assertEquals("data: [DONE]", events[events.length - 1], "the stream ends with [DONE]");
            for (int i = 0; i < events.length - 1; i++) {
                bodies.add(StrictJson.MAPPER.readTree(events[i].substring("data: ".length())));
            }
        } else {
            bodies.add(StrictJson.MAPPER.readTree(response.body()));
        }
        List<Integer> ids = new ArrayList<>();
        List<Double> logprobs = new ArrayList<>();
        long step = bodies.getFirst().path("weights_step").asLong(-1);
        for (JsonNode body : bodies) {
            assertEquals(step, body.path("weights_step").asLong(-1), "every chunk names the same step");
            for (JsonNode id : body.at("/choices/0/token_ids")) {
                ids.add(id.asInt());
            }
            for (JsonNode lp : body.at("/choices/0/logprobs/token_logprobs")) {
                logprobs.add(lp.asDouble());
            }
        }
        String header = response.headers().firstValue(CompletionHandler.WEIGHTS_STEP_HEADER).orElse(null);
        assertEquals(step < 0 ? null : Long.toString(step), header, "the header names the step the body names");
        return new Answer(ids + " " + logprobs, step);
    }

    /** The greedy answer of the model loaded from the job's checkpoint of {@code step}, run here, outside the server. */
    private String fromCheckpoint(String job, long step, int maxTokens) throws Exception {
        InferenceLimits limits = InferenceLimits.defaults();
        ServedModel served = ServedModel.load(factory.runDir(job), step, 1);
        InferenceEngine engine = new InferenceEngine(served.model(), Tokenizers.forModel(served.config().model()), 1,
                limits.prefillChunk(), limits.maxContext());
        Generation g = engine.start(PROMPT, SamplingParams.greedy(maxTokens));
        while (!g.finished()) {
            engine.step(List.of(g));
        }
        List<Integer> ids = new ArrayList<>();
        List<Double> logprobs = new ArrayList<>();
        for (int i = 0; i < g.generatedCount(); i++) {
            ids.add(g.tokens()[i]);
            logprobs.add(g.logprobs()[i]);
        }
        return ids + " " + logprobs;
    }

    private double gauge(String name) throws Exception {
        for (String line : send("GET", "/metrics", null).body().split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        throw new AssertionError("no gauge " + name);
    }

    private String createJob(String body) throws Exception {
        HttpResponse<String> created = send("POST", "/v1/jobs", body);
        assertEquals(201, created.statusCode(), created.body());
        return StrictJson.MAPPER.readTree(created.body()).get("id").asText();
    }

    private JsonNode job(String id) throws Exception {
        return StrictJson.MAPPER.readTree(send("GET", "/v1/jobs/" + id, null).body());
    }

    /** Waits until the job has applied {@code step} steps and its checkpoint of that step is on disk. */
    private void awaitStep(String id, long step) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        CheckpointStore store = new CheckpointStore(factory.runDir(id).resolve("checkpoints"));
        while (System.nanoTime() < deadline) {
            if (job(id).get("step").asLong() == step
                    && store.latest().map(CheckpointStore::stepOf).orElse(-1L) == step) {
                return;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("job " + id + " did not reach step " + step + ": " + job(id));
    }

    private void awaitState(String id, String state) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!job(id).get("state").asText().equals(state)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("job " + id + " is not " + state + ": " + job(id));
            }
            Thread.sleep(10);
        }
    }

    @Test
    void aRunningJobServesItsWeightsOfTheReportedStepAndIsListed() throws Exception {
        startServer();
        String id = createJob("{\"steps\": 4, \"gated\": true}");

        HttpResponse<String> early = complete(id, MAX_TOKENS, false);
        assertEquals(409, early.statusCode(), early.body());
        assertTrue(early.body().contains("optimizer step"), early.body());

        factory.gate.release();
        awaitStep(id, 1);
        Answer first = answer(complete(id, MAX_TOKENS, false), false);
        assertEquals(1, first.weightsStep());
        assertEquals(fromCheckpoint(id, 1, MAX_TOKENS), first.tokens(), "live step 1 = checkpoint of step 1");
        assertEquals(first, answer(complete(id, MAX_TOKENS, true), true), "streamed = whole, same cached step");
        // The run directory's newest checkpoint, served by the server itself, answers the same.
        assertEquals(first.tokens(), answer(complete("runs/" + id, MAX_TOKENS, false), false).tokens());

        JsonNode models = StrictJson.MAPPER.readTree(send("GET", "/v1/models", null).body());
        JsonNode listed = null;
        for (JsonNode model : models.get("data")) {
            if (model.get("id").asText().equals(id)) {
                listed = model;
            }
        }
        assertTrue(listed != null && listed.get("live").asBoolean(), "the running job is listed live: " + models);
        assertEquals(1, listed.get("weights_step").asLong());
        long weightBytes = 4L * LiveJobFactory.initialModel(ConfigLoader.fromYaml(LiveJobFactory.MODEL_YAML))
                .parameters().stream().mapToLong(p -> p.size()).sum();
        assertEquals(weightBytes, gauge(LIVE_BYTES), "one cached copy of the job's weights is counted");

        factory.gate.release();
        awaitStep(id, 2);
        Answer second = answer(complete(id, MAX_TOKENS, false), false);
        assertEquals(2, second.weightsStep(), "a new step is served once it is applied");
        assertEquals(fromCheckpoint(id, 2, MAX_TOKENS), second.tokens(), "live step 2 = checkpoint of step 2");
        assertNotEquals(first.tokens(), second.tokens(), "the steps' models differ, so the comparison means something");
    }

    /**
     * Completions asked while the job trains (every optimizer step pauses 40 ms between its two halves) each equal the
     * checkpoint of the step they report: never a model half-way through an update.
     */
    @Test
    void completionsDuringTrainingAreNeverHalfAnUpdate() throws Exception {
        startServer();
        String id = createJob("{\"steps\": 10, \"pause_ms\": 40}");
        List<Answer> answers = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!job(id).get("state").asText().equals("succeeded") && System.nanoTime() < deadline) {
            HttpResponse<String> response = complete(id, 4, false);
            if (response.statusCode() == 200) {
                Answer a = answer(response, false);
                if (a.weightsStep() >= 0) { // else the job ended meanwhile and its newest checkpoint answered
                    answers.add(a);
                }
            } else if (!job(id).get("state").asText().equals("succeeded")) {
                assertEquals(409, response.statusCode(), "before step 1: " + response.body());
            } // else the job ended meanwhile and was served from its job directory, which has no checkpoints here
        }
        awaitState(id, "succeeded");
        Map<Long, String> byStep = new TreeMap<>();
        for (Answer a : answers) {
            assertTrue(a.weightsStep() >= 1 && a.weightsStep() <= 10, "step " + a.weightsStep());
            String expected = byStep.computeIfAbsent(a.weightsStep(), step -> {
                try {
                    return fromCheckpoint(id, step, 4);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            assertEquals(expected, a.tokens(), "the answer of step " + a.weightsStep());
        }
        assertTrue(byStep.size() >= 2, "answers of several steps were served during training: " + byStep.keySet());
    }

    @Test
    void cancellingTheJobWhileServingFinishesTheCompletionAndThenServesCheckpoints() throws Exception {
        startServer();
        String id = createJob("{\"steps\": 5, \"gated\": true}");
        factory.gate.release();
        awaitStep(id, 1);
        int longAnswer = 100;
        // The stream's head comes once the request is admitted on the live weights; the job is cancelled after that.
        HttpResponse<InputStream> head = client.send(completion(id, longAnswer, true),
                HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, head.statusCode());
        assertEquals(202, send("DELETE", "/v1/jobs/" + id, null).statusCode());
        factory.gate.release(); // the cancel takes effect at the next step boundary
        awaitState(id, "cancelled");
        String body;
        try (InputStream in = head.body()) {
            body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Answer served = answer(withBody(head, body), true);
        assertEquals(1, served.weightsStep());
        assertEquals(fromCheckpoint(id, 1, longAnswer), served.tokens(), "the answer outlives the job's model");

        // An ended job is served from its checkpoints (the job directory here has none: 400 naming model).
        HttpResponse<String> after = complete(id, MAX_TOKENS, false);
        assertEquals(400, after.statusCode(), after.body());
        assertTrue(after.body().contains("model"), after.body());
        assertFalse(after.headers().firstValue(CompletionHandler.WEIGHTS_STEP_HEADER).isPresent());
        assertEquals(0.0, gauge(LIVE_BYTES), "the ended job's cached copy is dropped");
    }
}
