package io.kdapack.api.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.api.http.StrictJson;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.optim.AdamWState;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.checkpoint.TrainingState;
import io.kdapack.training.pipeline.PipelineSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code /v1/completions} and {@code /v1/models} on a real server with real HTTP clients and a tiny saved model. */
class CompletionsServerTest {
    private static final String TOKEN = "completions-test-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String MODEL = "runs/tiny";

    @TempDir
    Path temp;

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(WAIT).build();
    private final List<KdapackServer> servers = new ArrayList<>();
    private URI base;

    private void startServer(InferenceLimits limits) throws Exception {
        writeRun(temp.resolve(MODEL), 3);
        ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, temp.resolve("token"), 64 * 1024, temp,
                Duration.ZERO, Duration.ofSeconds(10), 16,
                new PipelineSettings(2, Duration.ofSeconds(60), Duration.ofSeconds(60), Duration.ofSeconds(10)));
        KdapackServer server = KdapackServer.start(settings, TOKEN, new ScriptedJobFactory(), limits,
                temp.resolve("jobs"));
        servers.add(server);
        base = URI.create("http://127.0.0.1:" + server.address().getPort());
    }

    @AfterEach
    void stop() {
        servers.forEach(KdapackServer::close);
    }

    /** A run directory as kdapack train leaves it: config.json and one checkpoint of a tiny byte-vocabulary model. */
    static void writeRun(Path run, long seed) throws Exception {
        KdapackConfig config = ConfigLoader.fromYaml(LiveJobFactory.MODEL_YAML);
        HybridModel model = new HybridModel(config.model(), new KdaChunked(1), true);
        model.initialize(seed);
        Random random = new Random(seed);
        for (Parameter p : model.parameters()) {
            if (!p.name().endsWith("A_log") && !p.name().contains("conv1d") && !p.name().endsWith("norm.weight")) {
                p.initNormal(random, p.name().contains("embed_tokens") ? 1.0 : 0.35);
            }
        }
        Files.createDirectories(run);
        Files.write(run.resolve("config.json"), StrictJson.write(config.toMap()));
        new CheckpointStore(run.resolve("checkpoints")).save(Checkpoint.of(new TrainingState(1, 0, "test", Map.of()),
                model.parameters(), new AdamWState(0, Map.of(), Map.of())));
    }

    private HttpResponse<String> post(String body) throws Exception {
        return client.send(HttpRequest.newBuilder(base.resolve("/v1/completions")).timeout(WAIT)
                .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(base.resolve(path)).timeout(WAIT)
                .header("Authorization", "Bearer " + TOKEN).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String body(Object prompt, int maxTokens, double temperature, long seed, boolean stream) {
        ObjectNode body = StrictJson.MAPPER.createObjectNode();
        body.put("model", MODEL);
        body.set("prompt", StrictJson.MAPPER.valueToTree(prompt));
        body.put("max_tokens", maxTokens);
        body.put("temperature", temperature);
        body.put("top_p", 0.9);
        body.put("seed", seed);
        body.put("stream", stream);
        body.put("logprobs", 3);
        return body.toString();
    }

    /**
     * Each choice's text, token ids, logprobs, top alternatives (by text and by id) and finish reason, from a whole
     * response or from its stream.
     */
    private static List<String> choices(HttpResponse<String> response, boolean stream) throws Exception {
        assertEquals(200, response.statusCode(), response.body());
        List<JsonNode> bodies = new ArrayList<>();
        if (stream) {
            assertTrue(response.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));
            String[] events = response.body().split("\n\n");
            assertEquals("data: [DONE]", events[events.length - 1], "the stream ends with [DONE]");
            for (int i = 0; i < events.length - 1; i++) {
                assertTrue(events[i].startsWith("data: "), events[i]);
                bodies.add(StrictJson.MAPPER.readTree(events[i].substring("data: ".length())));
            }
        } else {
            JsonNode whole = StrictJson.MAPPER.readTree(response.body());
            assertEquals("text_completion", whole.get("object").asText());
            assertEquals(whole.at("/usage/total_tokens").asInt(),
                    whole.at("/usage/prompt_tokens").asInt() + whole.at("/usage/completion_tokens").asInt());
            bodies.add(whole);
        }
        List<StringBuilder> text = new ArrayList<>();
        List<ArrayNode> ids = new ArrayList<>();
        List<ArrayNode> logprobs = new ArrayList<>();
        List<ArrayNode> topByText = new ArrayList<>();
        List<ArrayNode> topIds = new ArrayList<>();
        List<ArrayNode> topLogprobs = new ArrayList<>();
        List<String> finish = new ArrayList<>();
        for (JsonNode body : bodies) {
            for (JsonNode choice : body.get("choices")) {
                int index = choice.get("index").asInt();
                while (text.size() <= index) {
                    text.add(new StringBuilder());
                    ids.add(StrictJson.MAPPER.createArrayNode());
                    logprobs.add(StrictJson.MAPPER.createArrayNode());
                    topByText.add(StrictJson.MAPPER.createArrayNode());
                    topIds.add(StrictJson.MAPPER.createArrayNode());
                    topLogprobs.add(StrictJson.MAPPER.createArrayNode());
                    finish.add(null);
                }
                text.get(index).append(choice.get("text").asText());
                ids.get(index).addAll((ArrayNode) choice.get("token_ids"));
                logprobs.get(index).addAll((ArrayNode) choice.at("/logprobs/token_logprobs"));
                topByText.get(index).addAll((ArrayNode) choice.at("/logprobs/top_logprobs"));
                topIds.get(index).addAll((ArrayNode) choice.at("/logprobs/top_token_ids"));
                topLogprobs.get(index).addAll((ArrayNode) choice.at("/logprobs/top_token_logprobs"));
                if (!choice.get("finish_reason").isNull()) {
                    finish.set(index, choice.get("finish_reason").asText());
                }
            }
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < text.size(); i++) {
            assertNotNull(finish.get(i), "choice " + i + " has a finish reason");
            out.add(text.get(i) + " | " + ids.get(i) + " | " + logprobs.get(i) + " | " + topByText.get(i) + " | "
                    + topIds.get(i) + " | " + topLogprobs.get(i) + " | " + finish.get(i));
        }
        return out;
    }

    @Test
    void streamedAndNonStreamedAnswersAgreeAndModelsAreListed() throws Exception {
        startServer(InferenceLimits.defaults());
        JsonNode models = StrictJson.MAPPER.readTree(get("/v1/models").body());
        assertEquals("list", models.get("object").asText());
        assertEquals(MODEL, models.at("/data/0/id").asText());
        assertEquals(1, models.at("/data/0/checkpoint_step").asLong());

        Object prompts = List.of("Kimi Delta", List.of(1, 2, 3, 250), "x");
        List<String> whole = choices(post(body(prompts, 20, 1.0, 7, false)), false);
        List<String> streamed = choices(post(body(prompts, 20, 1.0, 7, true)), true);
        assertEquals(3, whole.size());
        assertEquals(whole, streamed);
        assertTrue(whole.get(0).endsWith("| length"), whole.get(0));
    }

    @Test
    void logprobsNGivesTheNMostLikelyTokensAtEachPositionTheChosenOneAmongThem() throws Exception {
        startServer(InferenceLimits.defaults());
        for (double temperature : new double[] {0, 1.5}) {
            ObjectNode request = (ObjectNode) StrictJson.MAPPER.readTree(body("Kimi", 12, temperature, 5, false));
            request.put("logprobs", 5);
            JsonNode choice = StrictJson.MAPPER.readTree(post(request.toString()).body()).at("/choices/0");
            JsonNode lp = choice.get("logprobs");
            JsonNode chosen = lp.get("token_logprobs");
            assertEquals(12, chosen.size());
            for (int t = 0; t < chosen.size(); t++) {
                JsonNode ids = lp.at("/top_token_ids/" + t);
                JsonNode values = lp.at("/top_token_logprobs/" + t);
                assertEquals(5, ids.size(), "five alternatives at token " + t);
                for (int i = 1; i < 5; i++) {
                    assertTrue(values.get(i).asDouble() <= values.get(i - 1).asDouble(), "most likely first: " + lp);
                }
                int token = choice.at("/token_ids/" + t).asInt();
                boolean among = false;
                for (int i = 0; i < 5; i++) {
                    if (ids.get(i).asInt() == token) {
                        among = true;
                        assertEquals(chosen.get(t).asDouble(), values.get(i).asDouble(), 0.0,
                                "the chosen token's ln p, bit for bit, at token " + t);
                    }
                }
                if (temperature == 0) {
                    assertEquals(token, ids.get(0).asInt(), "greedy picks the most likely at token " + t);
                } else if (!among) {
                    assertTrue(chosen.get(t).asDouble() <= values.get(4).asDouble(),
                            "a sampled token outside the five is no more likely than the fifth, at token " + t);
                }
                assertEquals(values.get(0).asDouble(), lp.at("/top_logprobs/" + t).elements().next().asDouble(),
                        "the first entry of top_logprobs is the most likely token's");
            }
        }
    }

    @Test
    void thirtyTwoConcurrentClientsEachGetWhatTheyGetAlone() throws Exception {
        startServer(new InferenceLimits(8, 64, 1L << 30, 4096, 256, 4, 64, 2, 1, 2));
        int clients = 32;
        List<String> bodies = new ArrayList<>();
        Random random = new Random(5);
        for (int i = 0; i < clients; i++) {
            int[] prompt = random.ints(1 + random.nextInt(90), 0, 256).toArray();
            bodies.add(body(prompt, 4 + random.nextInt(12), i % 4 == 0 ? 0 : 1.0, i, i % 2 == 0));
        }
        List<List<String>> alone = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            alone.add(choices(post(bodies.get(i)), i % 2 == 0));
        }
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            List<Future<List<String>>> together = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                int client = i;
                together.add(pool.submit(() -> choices(post(bodies.get(client)), client % 2 == 0)));
            }
            for (int i = 0; i < clients; i++) {
                assertEquals(alone.get(i), together.get(i).get(120, TimeUnit.SECONDS), "client " + i);
            }
        } finally {
            pool.shutdownNow();
        }
        awaitGauge("kdapack_inference_active_sequences", 0);
    }

    @Test
    void aDisconnectFreesTheSlotAndOverCapacityIsRefusedWith429() throws Exception {
        startServer(new InferenceLimits(1, 0, 1L << 30, 4096, 2000, 4, 64, 2, 2, 2));
        try (Socket socket = new Socket("127.0.0.1", base.getPort())) {
            byte[] request = body(List.of(1, 2, 3), 2000, 1.0, 1, true).getBytes(StandardCharsets.UTF_8);
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + request.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(request);
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                    StandardCharsets.UTF_8));
            assertEquals("HTTP/1.1 200 OK", in.readLine());
            String line;
            while ((line = in.readLine()) != null && !line.startsWith("data: ")) {
                // the head and the first chunk's size line
            }
            assertNotNull(line, "a first token arrived");
            assertEquals(1.0, gauge("kdapack_inference_active_sequences"));

            HttpResponse<String> busy = post(body("A", 4, 0, 0, false));
            assertEquals(429, busy.statusCode(), busy.body());
            assertEquals("2", busy.headers().firstValue("Retry-After").orElse(null));
        }
        awaitGauge("kdapack_inference_active_sequences", 0);
        awaitGauge("kdapack_inference_state_bytes", 0);
        assertEquals(200, post(body("A", 4, 0, 0, false)).statusCode(), "the freed slot serves the next request");
    }

    @Test
    void everyBadInputIs400NamingTheField() throws Exception {
        startServer(InferenceLimits.defaults());
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"\"}", "prompt");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": []}", "prompt");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": [1, 300]}", "prompt");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": [1, -1]}", "prompt");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"max_tokens\": 0}", "max_tokens");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"max_tokens\": 2049}", "max_tokens");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": " + StrictJson.MAPPER.writeValueAsString(new int[8192]) + "}",
                "prompt");
        assertBad("{\"model\": \"runs/none\", \"prompt\": \"a\"}", "model");
        assertBad("{\"model\": \"../elsewhere\", \"prompt\": \"a\"}", "model");
        assertBad("{\"prompt\": \"a\"}", "model");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"temperature\": -0.1}", "temperature");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"top_p\": 0}", "top_p");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"top_p\": 1.5}", "top_p");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"top_k\": -1}", "top_k");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"n\": 2}", "n");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"logprobs\": 6}", "logprobs");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"logprobs\": -1}", "logprobs");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"logprobs\": true}", "logprobs");
        assertBad("{\"model\": \"runs/tiny\", \"prompt\": \"a\", \"stream\": \"yes\"}", "stream");
        HttpResponse<String> noToken = client.send(HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .timeout(WAIT).POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(401, noToken.statusCode());
    }

    private void assertBad(String body, String field) throws Exception {
        HttpResponse<String> response = post(body);
        assertEquals(400, response.statusCode(), body + " → " + response.body());
        assertEquals(field, StrictJson.MAPPER.readTree(response.body()).get("field").asText(), response.body());
    }

    private double gauge(String name) throws Exception {
        for (String line : get("/metrics").body().split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        throw new AssertionError("no gauge " + name);
    }

    private void awaitGauge(String name, double expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        double value = gauge(name);
        while (value != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
            value = gauge(name);
        }
        assertEquals(expected, value, name);
    }
}
