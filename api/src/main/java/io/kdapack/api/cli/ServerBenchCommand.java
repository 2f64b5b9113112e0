package io.kdapack.api.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.actors.pipeline.PipelineSettings;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.jobs.TrainingJobFactory;
import io.kdapack.api.server.KdapackServer;
import io.kdapack.api.server.ServerSettings;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.HybridModels;
import io.kdapack.training.Trainer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench server}: the cost of the actor pipeline and of event streaming. Trains the same configuration
 * three times in this JVM (after one untimed direct run that warms the JIT up), one after the other: directly ({@link Trainer}, as {@code kdapack train}), as a job of an
 * in-process server on a loopback port with no event subscriber, and with {@code --subscribers} SSE clients following
 * it. Steps/s of a job come from its own started/finished times (setup included, as in the direct run's). Prints one
 * JSON object with the overhead ratios ({@code direct steps/s ÷ server steps/s − 1}).
 */
@Command(name = "server", mixinStandardHelpOptions = true,
        description = "Steps/s of training through the server (0 and N SSE subscribers) against the direct loop; JSON.")
final class ServerBenchCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN = "bench-server-token-0123456789";
    private static final Duration WAIT = Duration.ofMinutes(10);

    @Option(names = "--config", paramLabel = "FILE", description = "YAML configuration (default: the built-in demo model).")
    Path config;

    @Option(names = "--steps", defaultValue = "20", description = "Optimizer steps per run (default ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--subscribers", defaultValue = "500", description = "SSE clients of the streamed run (default ${DEFAULT-VALUE}).")
    int subscribers;

    @Override
    public Integer call() throws Exception {
        if (steps < 1 || subscribers < 0) {
            throw new IllegalArgumentException("--steps must be >= 1 and --subscribers >= 0, got " + steps + " and "
                    + subscribers);
        }
        KdapackConfig base = ConfigLoader.load(config);
        Path dataset = DatasetPaths.trainPrefix(base.train().data().prefix());
        Map<String, Object> document = document(base, dataset.getFileName().toString());
        KdapackConfig run = ConfigLoader.fromDocument(document);
        Path work = Files.createTempDirectory("kdapack-bench-server");
        try {
            direct(run, dataset, work.resolve("warm-up")); // JIT warm-up of the whole loop, not reported
            double direct = direct(run, dataset, work.resolve("direct"));
            double quiet;
            double streamed;
            ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, work.resolve("token"), 1 << 20,
                    dataset.getParent(), Duration.ofSeconds(30), 16, PipelineSettings.DEFAULT);
            try (KdapackServer server = KdapackServer.start(settings, TOKEN, new TrainingJobFactory(
                    new DataRoot(dataset.getParent()), work.resolve("jobs"), HybridModels.FACTORY))) {
                Client client = new Client(URI.create("http://127.0.0.1:" + server.address().getPort()));
                quiet = client.stepsPerSecond(document, 0, steps);
                streamed = client.stepsPerSecond(document, subscribers, steps);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("steps", steps);
            out.put("tokens_per_step", (long) run.train().globalBatchSize() * run.train().seqLength());
            out.put("direct_steps_per_s", direct);
            out.put("server_steps_per_s", quiet);
            out.put("server_subscribers", subscribers);
            out.put("server_streamed_steps_per_s", streamed);
            out.put("overhead_server", direct / quiet - 1);
            out.put("overhead_server_streamed", direct / streamed - 1);
            System.out.println(JSON.writeValueAsString(out));
        } finally {
            deleteTree(work);
        }
        return 0;
    }

    /** The configuration as a job document: {@code --steps}, checkpoint at the end only, dataset relative to its root. */
    @SuppressWarnings("unchecked")
    private Map<String, Object> document(KdapackConfig base, String datasetName) {
        Map<String, Object> document = new LinkedHashMap<>(base.toMap());
        document.remove("server");
        Map<String, Object> train = new LinkedHashMap<>((Map<String, Object>) document.get("train"));
        train.put("steps", steps);
        Map<String, Object> data = new LinkedHashMap<>((Map<String, Object>) train.get("data"));
        data.put("prefix", datasetName);
        train.put("data", data);
        train.put("checkpoint", Map.of("interval", 0));
        document.put("train", train);
        return document;
    }

    /** Steps/s of the direct loop, model creation and index building included (as in a job). */
    private static double direct(KdapackConfig run, Path dataset, Path checkpoints) throws IOException {
        long start = System.nanoTime();
        try (Trainer trainer = Trainer.create(run, HybridModels.FACTORY, dataset, checkpoints)) {
            while (!trainer.finished()) {
                trainer.step();
            }
            trainer.saveCheckpoint();
            return trainer.stepsDone() / ((System.nanoTime() - start) / 1e9);
        }
    }

    /** A job's HTTP client. */
    private record Client(URI base, HttpClient http) {
        Client(URI base) {
            this(base, HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(WAIT).build());
        }

        HttpRequest.Builder request(String path) {
            return HttpRequest.newBuilder(base.resolve(path)).timeout(WAIT).header("Authorization", "Bearer " + TOKEN);
        }

        /** Starts a job with {@code subscribers} clients following it, waits for its end, returns its steps/s. */
        double stepsPerSecond(Map<String, Object> document, int subscribers, int steps) throws Exception {
            HttpResponse<String> created = http.send(request("/v1/jobs").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(document))).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (created.statusCode() != 201) {
                throw new IOException("POST /v1/jobs answered " + created.statusCode() + ": " + created.body());
            }
            String id = JSON.readTree(created.body()).get("id").asText();
            List<Future<Long>> streams = new ArrayList<>();
            CountDownLatch connected = new CountDownLatch(subscribers);
            try (ExecutorService readers = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < subscribers; i++) {
                    streams.add(readers.submit(() -> follow(id, connected)));
                }
                JsonNode status = awaitEnd(id);
                for (Future<Long> stream : streams) {
                    long received = stream.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                    if (received != steps) {
                        throw new IOException("a subscriber received " + received + " of " + steps + " steps");
                    }
                }
                if (!"succeeded".equals(status.path("state").asText())) {
                    throw new IOException("job " + id + " ended " + status);
                }
                Duration took = Duration.between(Instant.parse(status.path("started_at").asText()),
                        Instant.parse(status.path("finished_at").asText()));
                return steps / (took.toNanos() / 1e9);
            }
        }

        /** Reads a job's event stream to its end; returns the step events received. */
        private long follow(String id, CountDownLatch connected) throws Exception {
            HttpResponse<Stream<String>> response = http.send(request("/v1/jobs/" + id + "/events").build(),
                    HttpResponse.BodyHandlers.ofLines());
            connected.countDown();
            try (Stream<String> lines = response.body()) {
                long stepEvents = 0;
                for (var it = lines.iterator(); it.hasNext(); ) {
                    String line = it.next();
                    if (line.equals("event: end")) {
                        return stepEvents;
                    }
                    if (line.equals("event: step")) {
                        stepEvents++;
                    }
                }
                return stepEvents;
            }
        }

        /** Polls the job's status until it has ended (the measured time comes from the status, not from polling). */
        private JsonNode awaitEnd(String id) throws Exception {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                JsonNode status = JSON.readTree(http.send(request("/v1/jobs/" + id).build(),
                        HttpResponse.BodyHandlers.ofString()).body());
                if (!status.path("finished_at").isNull() && !status.path("finished_at").isMissingNode()) {
                    return status;
                }
                Thread.sleep(50);
            }
            throw new IOException("job " + id + " did not end within " + WAIT);
        }
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
