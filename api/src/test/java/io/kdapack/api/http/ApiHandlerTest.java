package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobManager;
import io.kdapack.api.server.JobFactory;
import io.kdapack.api.server.JobService;
import io.kdapack.api.server.ScriptedJobFactory;
import io.kdapack.api.server.ServerMetrics;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.training.pipeline.PipelineSettings;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class ApiHandlerTest {

    private static final String TOKEN = "test-token-0123456789abcdef";
    private static final String AUTH = "\r\nAuthorization: Bearer " + TOKEN;
    private static final int MAX_BODY = 4096;

    private static ActorTestKit testKit;
    private static ExecutorService factoryCalls;
    private static ActorRef<JobManager.Command> manager;
    private static byte[] openApi;

    @BeforeAll
    static void startActors() throws IOException {
        testKit = ActorTestKit.create();
        factoryCalls = Executors.newFixedThreadPool(2);
        var settings = new PipelineSettings(2, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30));
        manager = testKit.spawn(JobManager.create(settings, 16));
        try (InputStream in = ApiHandlerTest.class.getResourceAsStream("/openapi.yaml")) {
            openApi = in.readAllBytes();
        }
    }

    @AfterAll
    static void stopActors() {
        factoryCalls.shutdownNow();
        testKit.shutdownTestKit();
    }

    private static LoopbackHttp http(JobFactory factory) throws InterruptedException {
        var jobs = new JobService(manager, testKit.system().scheduler(), factory, factoryCalls, Duration.ofSeconds(10));
        return new LoopbackHttp(new HttpApiInitializer(jobs, new ServerMetrics(), TOKEN, MAX_BODY, openApi,
                Duration.ZERO));
    }

    private static JsonNode json(FullHttpResponse response) throws IOException {
        assertEquals("application/json", response.headers().get(HttpHeaderNames.CONTENT_TYPE));
        return StrictJson.MAPPER.readTree(response.content().toString(StandardCharsets.UTF_8));
    }

    /** Asserts status and the error body; returns the error's field (null allowed). */
    private static String error(FullHttpResponse response, int status, String messagePart) throws IOException {
        JsonNode body = json(response);
        assertEquals(status, response.status().code(), body::toString);
        assertTrue(body.get("error").asText().contains(messagePart), body::toString);
        assertTrue(body.has("field"), "every error names a field, possibly null");
        response.release();
        return body.get("field").isNull() ? null : body.get("field").asText();
    }

    @Test
    void healthNeedsNoTokenEverythingElseDoes() throws Exception {
        try (var http = http(new ScriptedJobFactory())) {
            FullHttpResponse health = http.exchange("GET /healthz HTTP/1.1\r\nHost: x", "");
            assertEquals(200, health.status().code());
            assertEquals("ok", json(health).get("status").asText());

            FullHttpResponse missing = http.exchange("GET /v1/jobs HTTP/1.1\r\nHost: x", "");
            assertEquals("Bearer", missing.headers().get(HttpHeaderNames.WWW_AUTHENTICATE));
            assertEquals("Authorization", error(missing, 401, "missing bearer token"));
            error(http.exchange("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong", ""), 401,
                    "invalid bearer token");
            error(http.exchange("GET /openapi.yaml HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + TOKEN, ""), 401,
                    "invalid bearer token");

            FullHttpResponse list = http.exchange("GET /v1/jobs HTTP/1.1\r\nHost: x" + AUTH, "");
            assertEquals(200, list.status().code(), "the same connection keeps serving after refusals");
            assertTrue(json(list).get("jobs").isArray());
        }
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrderAndGarbageIs400() throws Exception {
        try (var http = http(new ScriptedJobFactory())) {
            String jobs = "GET /v1/jobs HTTP/1.1\r\nHost: x" + AUTH + "\r\n\r\n";
            String health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
            http.sendRaw(jobs + health + jobs);
            assertTrue(json(http.response()).has("jobs"), "first: the job list (answered asynchronously)");
            assertEquals("ok", json(http.response()).get("status").asText(), "second: health, after it");
            assertTrue(json(http.response()).has("jobs"));
        }
        try (var http = http(new ScriptedJobFactory())) {
            http.sendRaw("GET / HTTP/1.1\r\nBad Header\r\n\r\n");
            error(http.response(), 400, "malformed HTTP request");
        }
    }

    @Test
    void unknownPathsAndMethodsAnswer404And405() throws Exception {
        try (var http = http(new ScriptedJobFactory())) {
            error(http.exchange("GET /v2/nothing HTTP/1.1\r\nHost: x" + AUTH, ""), 404, "no endpoint /v2/nothing");
            FullHttpResponse wrongMethod = http.exchange("PUT /v1/jobs/abc HTTP/1.1\r\nHost: x" + AUTH, "");
            assertEquals("GET, DELETE", wrongMethod.headers().get(HttpHeaderNames.ALLOW));
            error(wrongMethod, 405, "accepts GET, DELETE");
            error(http.exchange("GET /v1/jobs/nope HTTP/1.1\r\nHost: x" + AUTH, ""), 404, "no job nope");
            error(http.exchange("DELETE /v1/jobs/nope HTTP/1.1\r\nHost: x" + AUTH, ""), 404, "no job nope");
            error(http.exchange("GET /v1/jobs/nope/events HTTP/1.1\r\nHost: x" + AUTH, ""), 404, "no job nope");
            assertEquals("id", error(http.exchange("POST /v1/jobs/%2e%2e/resume HTTP/1.1\r\nHost: x" + AUTH, ""), 400,
                    "job id must match"));
        }
    }

    @Test
    void badDocumentsAnswer4xxWithTheFieldAndTheConnectionKeepsServing() throws Exception {
        try (var http = http(new ScriptedJobFactory())) {
            String post = "POST /v1/jobs HTTP/1.1\r\nHost: x" + AUTH;
            assertNull(error(http.exchange(post + "\r\nContent-Type: application/json", "{\"steps\": 3,"), 400,
                    "malformed JSON"));
            assertNull(error(http.exchange(post + "\r\nContent-Type: application/json", "[1, 2]"), 400,
                    "must be a JSON object"));
            assertNull(error(http.exchange(post + "\r\nContent-Type: application/json", "{\"a\": 1, \"a\": 2}"), 400,
                    "Duplicate field"));
            assertNull(error(http.exchange(post + "\r\nContent-Type: application/yaml", "steps: [1,\n"), 400,
                    "malformed YAML"));
            assertEquals("Content-Type", error(http.exchange(post + "\r\nContent-Type: text/csv", "a,b"), 415,
                    "unsupported content type"));
            assertEquals("steps", error(http.exchange(post + "\r\nContent-Type: application/json", "{\"steps\": 0}"),
                    400, "steps = 0 (from request body): expected an integer >= 1"));
            error(http.exchange(post, ""), 400, "the request body is empty");

            FullHttpResponse created = http.exchange(post + "\r\nContent-Type: application/yaml", "steps: 2\n");
            assertEquals(201, created.status().code());
            JsonNode status = json(created);
            assertEquals("/v1/jobs/" + status.get("id").asText(), created.headers().get(HttpHeaderNames.LOCATION));
            assertEquals(2, status.get("total_steps").asInt());
        }
    }

    @Test
    void stepsRequestsAreCheckedFieldByField() throws Exception {
        var factory = new ScriptedJobFactory();
        try (var http = http(factory)) {
            stepsChecks(http, factory);
        } finally {
            factory.gate.release(100);
        }
    }

    private static void stepsChecks(LoopbackHttp http, ScriptedJobFactory factory) throws Exception {
        {
            FullHttpResponse created = http.exchange("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                    + AUTH, "{\"steps\": 5, \"gated\": true}");
            String job = json(created).get("id").asText();
            String post = "POST /v1/steps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json" + AUTH;
            String good = "\"tokens\": [[1, 2, 3]], \"labels\": [[2, 3, 4]], \"loss_mask\": [[1, 1, 0]], "
                    + "\"segment_ids\": [[1, 1, 2]], \"position_ids\": [[0, 1, 0]]";

            assertEquals("extra", error(http.exchange(post, "{\"job\": \"" + job + "\", " + good + ", \"extra\": 1}"),
                    400, "unknown field 'extra'"));
            assertEquals("tokens[0][1]", error(http.exchange(post, "{\"job\": \"" + job
                    + "\", \"tokens\": [[1, \"2\", 3]]}"), 400, "wrong type"));
            assertEquals("tokens[0][1]", error(http.exchange(post, "{\"job\": \"" + job
                    + "\", \"tokens\": [[1, 2.5, 3]]}"), 400, "wrong type"));
            assertEquals("job", error(http.exchange(post, "{\"job\": 7, " + good + "}"), 400, "wrong type"));
            assertEquals("tokens", error(http.exchange(post, "{\"job\": \"" + job + "\", "
                    + good.replace("[[1, 2, 3]]", "[[1, -2, 3]]") + "}"), 400, "entry 1 must be >= 0, got -2"));
            assertEquals("loss_mask", error(http.exchange(post, "{\"job\": \"" + job + "\", "
                    + good.replace("[[1, 1, 0]]", "[[1, 0.5, 0]]") + "}"), 400, "entry 1 must be 0 or 1, got 0.5"));
            assertEquals("labels[0]", error(http.exchange(post, "{\"job\": \"" + job + "\", "
                    + good.replace("[[2, 3, 4]]", "[[2, 3]]") + "}"), 400, "row 0 has 2 entries"));
            assertEquals("position_ids", error(http.exchange(post, "{\"job\": \"" + job + "\", "
                    + good.replace(", \"position_ids\": [[0, 1, 0]]", "") + "}"), 400, "position_ids is required"));
            assertEquals("job", error(http.exchange(post, "{" + good + "}"), 400, "job is required"));
            error(http.exchange(post, "{\"job\": \"nope\", " + good + "}"), 404, "no job nope");

            // The job is inside step 1 (its loader waits at the gate): the evaluation waits for that step.
            awaitRunningWithStepsDone(http, job, 0);
            http.send(post, ("{\"job\": \"" + job + "\", " + good + "}").getBytes(StandardCharsets.UTF_8));
            releaseStepOnceEvaluationWaits(job, factory);
            FullHttpResponse loss = http.response();
            assertEquals(200, loss.status().code(), () -> loss.content().toString(StandardCharsets.UTF_8));
            JsonNode body = json(loss);
            assertEquals(2, body.get("segments").size(), "segments 1 and 2");
            // Double: segment s has sum 2(s+1) over count 2; total (2 + 4) / 4.
            assertEquals(1.5, body.get("loss").asDouble());
            assertEquals(2.0, body.get("segments").get(1).get("loss").asDouble());

            // The same batch as a safetensors body, job id in the query.
            byte[] tensors = SafeTensors.builder()
                    .put(Tensor.of("tokens", new int[] {1, 2, 3}, 1, 3))
                    .put(Tensor.of("labels", new int[] {2, 3, 4}, 1, 3))
                    .put(Tensor.of("loss_mask", new float[] {1, 1, 0}, 1, 3))
                    .put(Tensor.of("segment_ids", new int[] {1, 1, 2}, 1, 3))
                    .put(Tensor.of("position_ids", new int[] {0, 1, 0}, 1, 3))
                    .build().toBytes();
            String binary = "POST /v1/steps?job=" + job + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream"
                    + AUTH;
            awaitRunningWithStepsDone(http, job, 1);
            http.send(binary, tensors);
            releaseStepOnceEvaluationWaits(job, factory);
            FullHttpResponse fromTensors = http.response();
            assertEquals(200, fromTensors.status().code(), () -> fromTensors.content().toString(StandardCharsets.UTF_8));
            JsonNode tensorAnswer = json(fromTensors);
            assertEquals(body.get("step").asLong() + 1, tensorAnswer.get("step").asLong(),
                    "each answer names the step of the weights that scored it: one step later here");
            ((com.fasterxml.jackson.databind.node.ObjectNode) tensorAnswer).remove("step");
            ((com.fasterxml.jackson.databind.node.ObjectNode) body).remove("step");
            ((com.fasterxml.jackson.databind.node.ObjectNode) tensorAnswer).remove("last_step");
            ((com.fasterxml.jackson.databind.node.ObjectNode) body).remove("last_step");
            assertEquals(body, tensorAnswer, "the same answer as for JSON arrays");
            assertNull(error(http.exchange(binary, new byte[] {1, 2, 3}), 400, "malformed safetensors"));
            byte[] noLabels = SafeTensors.builder().put(Tensor.of("tokens", new int[] {1, 2, 3}, 1, 3)).build().toBytes();
            assertEquals("labels", error(http.exchange(binary, noLabels), 400, "tensor labels is missing"));
            assertEquals("job", error(http.exchange(binary.replace("?job=" + job, ""), tensors), 400, "job is required"));
        }
    }

    /**
     * Polls the job's status until it runs with {@code steps} steps done. Its supervisor has then asked the
     * model for step {@code steps + 1} before it forwards any later evaluation, so that evaluation waits for
     * that step, which needs one more permit of the gate.
     */
    private static void awaitRunningWithStepsDone(LoopbackHttp http, String job, int steps) throws Exception {
        JsonNode status = null;
        for (int attempt = 0; attempt < 1000; attempt++) {
            status = json(http.exchange("GET /v1/jobs/" + job + " HTTP/1.1\r\nHost: x" + AUTH, ""));
            if (status.get("state").asText().equals("running") && status.get("step").asInt() == steps) {
                return;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("job " + job + " did not reach step " + steps + " within 10 s: " + status);
    }

    /**
     * Lets the step in progress finish once the evaluation just sent waits for it at the model. Released any
     * earlier, the permit could let the step finish before the evaluation arrives, and leave the evaluation
     * waiting behind the next step, which no permit ever lets through.
     */
    private static void releaseStepOnceEvaluationWaits(String job, ScriptedJobFactory factory) throws Exception {
        for (int attempt = 0; attempt < 1000; attempt++) {
            JobHandle handle = AskPattern.<JobManager.Command, Optional<JobHandle>>ask(manager,
                    replyTo -> new JobManager.GetJob(job, replyTo), Duration.ofSeconds(10), testKit.scheduler())
                    .toCompletableFuture().get().orElseThrow();
            if (handle.gauges().waitingEvaluations() == 1) {
                factory.gate.release(1);
                return;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("the evaluation did not wait for the step of job " + job + " within 10 s");
    }

    @Test
    void aTooLargeBodyAnswers413AndClosesWhileNewConnectionsAreServed() throws Exception {
        var factory = new ScriptedJobFactory();
        try (var http = http(factory)) {
            byte[] huge = new byte[MAX_BODY + 1];
            FullHttpResponse tooLarge = http.exchange("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                    + AUTH, huge);
            error(tooLarge, 413, "request body larger than " + MAX_BODY + " bytes");
            assertTrue(http.closedByServer(), "the oversized connection is closed");
        }
        try (var http = http(factory)) {
            assertEquals(200, http.exchange("GET /healthz HTTP/1.1\r\nHost: x", "").status().code());
        }
    }

    @Test
    void metricsAndOpenApiAreServed() throws Exception {
        try (var http = http(new ScriptedJobFactory())) {
            http.exchange("GET /v1/jobs/none HTTP/1.1\r\nHost: x" + AUTH, "").release();
            http.exchange("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json" + AUTH,
                    "{\"steps\": 1}").release();
            FullHttpResponse metrics = http.exchange("GET /metrics HTTP/1.1\r\nHost: x" + AUTH, "");
            assertEquals(200, metrics.status().code());
            assertEquals(ApiHandler.PROMETHEUS_TEXT, metrics.headers().get(HttpHeaderNames.CONTENT_TYPE));
            String text = metrics.content().toString(StandardCharsets.UTF_8);
            assertTrue(text.contains("kdapack_http_requests_total{status=\"404\"} 1.0"), text);
            assertTrue(text.contains("kdapack_http_requests_total{status=\"201\"} 1.0"), text);
            assertTrue(text.contains("kdapack_job_steps{job=\"j"), text);
            assertTrue(text.contains("kdapack_job_queue_depth{job=\"j"), text);
            assertTrue(text.contains("queue=\"evaluations\"}"), text);
            assertTrue(text.contains("kdapack_jobs{state=\"running\"}") || text.contains("kdapack_jobs{state=\"succeeded\"}"),
                    text);

            assertTrue(!text.contains("kdapack_cluster_members"), "no membership gauges without a cluster: " + text);
            FullHttpResponse cluster = http.exchange("GET /v1/cluster HTTP/1.1\r\nHost: x" + AUTH, "");
            assertEquals(404, cluster.status().code(), "a server on its own is no cluster member");
            assertTrue(cluster.content().toString(StandardCharsets.UTF_8).contains("cluster.enabled is false"));
            cluster.release();

            FullHttpResponse spec = http.exchange("GET /openapi.yaml HTTP/1.1\r\nHost: x" + AUTH, "");
            assertEquals(200, spec.status().code());
            JsonNode document = new YAMLMapper().readTree(spec.content().toString(StandardCharsets.UTF_8));
            for (Route route : Route.values()) {
                String template = switch (route) {
                    case HEALTH -> "/healthz";
                    case METRICS -> "/metrics";
                    case OPENAPI -> "/openapi.yaml";
                    case LIST_JOBS, CREATE_JOB -> "/v1/jobs";
                    case GET_JOB, CANCEL_JOB -> "/v1/jobs/{id}";
                    case RESUME_JOB -> "/v1/jobs/{id}/resume";
                    case JOB_EVENTS -> "/v1/jobs/{id}/events";
                    case STEPS -> "/v1/steps";
                    case COMPLETIONS -> "/v1/completions";
                    case MODELS -> "/v1/models";
                    case DASHBOARD -> "/";
                    case DASHBOARD_ASSET -> "/ui/{asset}";
                    case CLUSTER -> "/v1/cluster";
                };
                String method = switch (route) {
                    case CREATE_JOB, RESUME_JOB, STEPS, COMPLETIONS -> "post";
                    case CANCEL_JOB -> "delete";
                    default -> "get";
                };
                assertTrue(document.path("paths").path(template).has(method), route + " is documented");
            }
        }
    }
}
