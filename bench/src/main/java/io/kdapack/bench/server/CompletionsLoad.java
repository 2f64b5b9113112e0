package io.kdapack.bench.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.actors.inference.InferenceLimits;
import io.kdapack.api.http.StrictJson;
import io.kdapack.api.server.JobFactory;
import io.kdapack.api.server.KdapackServer;
import io.kdapack.api.server.ServerSettings;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.optim.AdamWState;
import io.kdapack.training.checkpoint.Checkpoint;
import io.kdapack.training.checkpoint.CheckpointStore;
import io.kdapack.training.checkpoint.TrainingState;
import io.kdapack.training.pipeline.PipelineSettings;
import io.kdapack.training.pipeline.TrainingBackend;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Time to first token through the whole server ({@code kdapack bench generate}): a real {@link KdapackServer} on a
 * loopback port serving a run directory written here (random weights), and {@code clients} concurrent HTTP clients,
 * each sending streamed completions one after another; a request's time to first token is from its send to its
 * first {@code data:} line.
 */
public final class CompletionsLoad {
    /** The server under load serves completions only: job requests are refused. */
    private static final JobFactory NO_JOBS = new JobFactory() {
        @Override
        public TrainingBackend create(String jobId, JsonNode config) {
            throw new IllegalArgumentException("the completions benchmark's server runs no jobs");
        }

        @Override
        public TrainingBackend resume(String jobId) {
            throw new IllegalArgumentException("the completions benchmark's server runs no jobs");
        }

        @Override
        public List<String> unfinishedJobs() {
            return List.of();
        }
    };

    private static final String TOKEN = "bench-generate-token-0123456789";

    private CompletionsLoad() {
    }

    /** Writes {@code run} as {@code kdapack train} would: {@code config.json} and one checkpoint. */
    public static void writeRun(Path run, ModelConfig model, long seed) throws IOException {
        KdapackConfig base = ConfigLoader.fromDocument(Map.of());
        KdapackConfig config = new KdapackConfig(model, base.train(), base.server());
        HybridModel hybrid = new HybridModel(model, new KdaChunked(1), true);
        hybrid.initialize(seed);
        Files.createDirectories(run);
        Files.write(run.resolve("config.json"), StrictJson.write(config.toMap()));
        new CheckpointStore(run.resolve("checkpoints")).save(Checkpoint.of(new TrainingState(1, 0, "bench", Map.of()),
                hybrid.parameters(), new AdamWState(0, Map.of(), Map.of())));
    }

    /**
     * @param rounds requests per client
     * @return {@code ttft_p50_ms}, {@code ttft_p99_ms}, {@code requests}
     */
    public static Map<String, Object> run(Path dir, ModelConfig model, int clients, int rounds, int promptTokens,
                                          int maxTokens, int threads) throws Exception {
        writeRun(dir.resolve("run"), model, 1);
        ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, dir.resolve("token"), 1 << 20, dir,
                Duration.ZERO, Duration.ofSeconds(30), 4, PipelineSettings.DEFAULT);
        InferenceLimits defaults = InferenceLimits.defaults();
        InferenceLimits limits = new InferenceLimits(defaults.maxSequences(), defaults.queueCapacity(),
                defaults.stateBudgetBytes(), defaults.maxContext(), defaults.maxTokens(), defaults.maxPrompts(),
                defaults.prefillChunk(), defaults.maxModels(), defaults.retryAfterSeconds(), threads);
        try (KdapackServer server = KdapackServer.start(settings, TOKEN, NO_JOBS, limits, dir.resolve("jobs"))) {
            URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + "/v1/completions");
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            Random random = new Random(7);
            int vocab = model.vocabSize();
            ExecutorService pool = Executors.newFixedThreadPool(clients);
            try {
                request(client, uri, random.ints(promptTokens, 0, vocab).toArray(), maxTokens); // load the model
                List<Future<List<Double>>> futures = new ArrayList<>();
                for (int c = 0; c < clients; c++) {
                    int[][] prompts = new int[rounds][];
                    for (int r = 0; r < rounds; r++) {
                        prompts[r] = random.ints(promptTokens, 0, vocab).toArray();
                    }
                    futures.add(pool.submit(() -> {
                        List<Double> times = new ArrayList<>();
                        for (int[] prompt : prompts) {
                            times.add(request(client, uri, prompt, maxTokens));
                        }
                        return times;
                    }));
                }
                List<Double> all = new ArrayList<>();
                for (Future<List<Double>> f : futures) {
                    all.addAll(f.get(10, TimeUnit.MINUTES));
                }
                double[] sorted = all.stream().mapToDouble(Double::doubleValue).sorted().toArray();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("clients", clients);
                out.put("requests", sorted.length);
                out.put("prompt_tokens", promptTokens);
                out.put("max_tokens", maxTokens);
                out.put("ttft_p50_ms", 1e3 * sorted[(int) Math.ceil(0.50 * sorted.length) - 1]);
                out.put("ttft_p99_ms", 1e3 * sorted[(int) Math.ceil(0.99 * sorted.length) - 1]);
                return out;
            } finally {
                pool.shutdownNow();
            }
        }
    }

    /** Sends one streamed completion, reads it to the end; returns seconds to its first {@code data:} line. */
    private static double request(HttpClient client, URI uri, int[] prompt, int maxTokens) throws Exception {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("model", "run");
        body.put("prompt", prompt);
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("stream", true);
        HttpRequest request = HttpRequest.newBuilder(uri).header("Authorization", "Bearer " + TOKEN)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(StrictJson.write(body))).build();
        long t0 = System.nanoTime();
        HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        try (BufferedReader in = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
            if (response.statusCode() != 200) {
                throw new IOException("completion answered " + response.statusCode() + ": " + in.readLine());
            }
            double first = -1;
            String line;
            while ((line = in.readLine()) != null) {
                if (first < 0 && line.startsWith("data: ")) {
                    first = (System.nanoTime() - t0) * 1e-9;
                }
            }
            if (first < 0) {
                throw new IOException("completion stream without data");
            }
            return first;
        }
    }
}
