package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.jobs.TrainingJobFactory;
import io.kdapack.api.server.KdapackServer;
import io.kdapack.api.server.ServerSettings;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.ServerConfig;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.pipeline.PipelineSettings;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A real {@link KdapackServer} with the production job factory on an ephemeral loopback port, a real HTTP client, and
 * the tiny training configuration the integration tests share.
 */
final class TrainingServer implements AutoCloseable {
    static final String TOKEN = "integration-test-token-0123456789";
    static final Duration WAIT = Duration.ofSeconds(60);
    static final ObjectMapper JSON = new ObjectMapper();

    private final KdapackServer server; // null for a client of a server in another process
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(WAIT).build();
    private final URI base;

    /** @param dataRoot the directory job dataset paths are confined to; jobs live in {@code jobsDir} */
    TrainingServer(Path dataRoot, Path jobsDir) throws Exception {
        ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, jobsDir.resolveSibling("token"),
                1 << 20, dataRoot, Duration.ofMillis(ServerConfig.defaults().eventBatchMs()), Duration.ofSeconds(30),
                16,
                new PipelineSettings(2, WAIT, WAIT, WAIT));
        server = KdapackServer.start(settings, TOKEN,
                new TrainingJobFactory(new DataRoot(dataRoot), jobsDir, HybridModels.FACTORY));
        base = URI.create("http://127.0.0.1:" + server.address().getPort());
    }

    /** A client of a server listening on {@code port} of the loopback interface (another process). */
    TrainingServer(int port) {
        server = null;
        base = URI.create("http://127.0.0.1:" + port);
    }

    /** The repository root: Maven runs a module's tests in the module directory. */
    static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("datasets/mqar"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no datasets/mqar above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }

    /**
     * A tiny hybrid model (one KDA and one MLA layer of width 32, MTP on) trained for {@code steps} steps of M = 2
     * micro-batches of B = 2 samples of L = 32 tokens, one thread, a checkpoint every 2 steps, on {@code prefix}.
     */
    static Map<String, Object> tinyConfig(int steps, String prefix) {
        return tinyConfig(steps, prefix, false);
    }

    /** As {@link #tinyConfig(int, String)}, with {@code train.calculate_per_token_loss = perTokenLoss}. */
    static Map<String, Object> tinyConfig(int steps, String prefix, boolean perTokenLoss) {
        return Map.of(
                "model", Map.of("hidden_size", 32, "num_layers", 2, "full_attention_interval", 2,
                        "intermediate_size", 64,
                        "kda", Map.of("num_heads", 1, "num_v_heads", 1, "head_dim", 16),
                        "mla", Map.of("num_heads", 1, "kv_lora_rank", 16, "qk_nope_head_dim", 8, "qk_rope_head_dim", 4,
                                "v_head_dim", 8)),
                "train", Map.of("seed", 5, "steps", steps, "micro_batch_size", 2, "num_microbatches", 2,
                        "seq_length", 32, "threads", 1, "checkpoint", Map.of("interval", 2),
                        "optimizer", Map.of("lr", 0.01, "warmup_steps", 1),
                        "calculate_per_token_loss", perTokenLoss, "data", Map.of("prefix", prefix)));
    }

    /** The same configuration trained directly ({@code kdapack train}'s loop), all steps. */
    static List<StepResult> trainDirectly(Map<String, Object> config, Path dataset, Path checkpoints) throws Exception {
        List<StepResult> steps = new ArrayList<>();
        try (Trainer trainer = Trainer.create(ConfigLoader.fromDocument(config), HybridModels.FACTORY, dataset,
                checkpoints)) {
            while (!trainer.finished()) {
                steps.add(trainer.step());
            }
        }
        return steps;
    }

    HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(base.resolve(path)).timeout(WAIT).header("Authorization", "Bearer " + TOKEN);
    }

    HttpResponse<String> send(HttpRequest request) throws Exception {
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    String startJob(Map<String, Object> config) throws Exception {
        return startJob(JSON.writeValueAsString(config), "application/json");
    }

    /** {@code POST /v1/jobs} of {@code config} as JSON; the answer, whatever its status. */
    HttpResponse<String> submitJob(Map<String, Object> config) throws Exception {
        return submitJob(JSON.writeValueAsString(config), "application/json");
    }

    private HttpResponse<String> submitJob(String document, String contentType) throws Exception {
        return send(request("/v1/jobs").header("Content-Type", contentType)
                .POST(HttpRequest.BodyPublishers.ofString(document)).build());
    }

    /** Starts a job from a configuration document of the given content type; returns its id. */
    String startJob(String document, String contentType) throws Exception {
        HttpResponse<String> created = submitJob(document, contentType);
        assertEquals(201, created.statusCode(), created.body());
        return JSON.readTree(created.body()).get("id").asText();
    }

    /** The server's address (in-process servers only). */
    java.net.InetSocketAddress address() {
        return server.address();
    }

    JsonNode status(String id) throws Exception {
        HttpResponse<String> response = send(request("/v1/jobs/" + id).build());
        assertEquals(200, response.statusCode(), response.body());
        return JSON.readTree(response.body());
    }

    /**
     * A job's step events (their JSON data) up to its end event, or {@code limit} steps; and the end state.
     * {@code remaining} reads on in the same stream (after a limit was reached).
     */
    record Events(List<JsonNode> steps, String end, Iterator<String> remaining) {
    }

    Events follow(String id, int limit) throws Exception {
        HttpResponse<Stream<String>> response = client.send(request("/v1/jobs/" + id + "/events").build(),
                HttpResponse.BodyHandlers.ofLines());
        assertEquals(200, response.statusCode());
        try (Stream<String> lines = response.body()) {
            return read(lines.iterator(), limit);
        }
    }

    /** As {@link #follow(String, int)} with a request of one's own (headers such as Last-Event-ID); left open. */
    Events follow(HttpRequest request, int limit) throws Exception {
        HttpResponse<Stream<String>> response = client.send(request, HttpResponse.BodyHandlers.ofLines());
        assertEquals(200, response.statusCode());
        return read(response.body().iterator(), limit);
    }

    static Events read(Iterator<String> lines, int limit) throws Exception {
        List<JsonNode> steps = new ArrayList<>();
        String event = null;
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("event: ")) {
                event = line.substring(7);
            } else if (line.startsWith("data: ")) {
                JsonNode data = JSON.readTree(line.substring(6));
                if ("end".equals(event)) {
                    return new Events(steps, data.path("state").asText(), lines);
                }
                steps.add(data);
                if (steps.size() == limit) {
                    return new Events(steps, null, lines);
                }
            }
        }
        return new Events(steps, null, lines);
    }

    @Override
    public void close() {
        if (server != null) {
            server.close();
        }
    }
}
