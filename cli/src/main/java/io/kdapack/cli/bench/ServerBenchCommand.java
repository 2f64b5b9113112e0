package io.kdapack.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.job.JobState;
import io.kdapack.api.http.DataRoot;
import io.kdapack.api.jobs.TrainingJobFactory;
import io.kdapack.api.server.KdapackServer;
import io.kdapack.api.server.ServerSettings;
import io.kdapack.bench.InterleavedTiming;
import io.kdapack.bench.server.SseSubscribersProcess;
import io.kdapack.bench.server.ThreadCpu;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.config.ServerConfig;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.HybridModels;
import io.kdapack.training.Trainer;
import io.kdapack.training.pipeline.PipelineSettings;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.stream.DoubleStream;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench server}: the cost of the actor pipeline and of event streaming, as steady-state steps/s of the
 * same training run directly ({@link Trainer}, the loop of {@code kdapack train}) and as a job of an in-process server
 * on a loopback port, with no event subscriber and with {@code --subscribers} SSE clients in a separate JVM.
 *
 * <p>Method (like for like): every run trains the same configuration (same steps, batch, threads, checkpoint only after
 * the last step), starting from scratch. Each run's time of the end of every step is taken in this JVM with
 * {@link System#nanoTime}: the direct loop's after each {@link Trainer#step}, the job's when its step event enters the
 * run's {@link JobEventLog} (a listener; nothing is added to the job's path). A run's rate is
 * {@code (N − W) / (t_N − t_W)} over the steps after the {@code --warmup} first ones, so job setup (model build, dataset
 * opening), JIT warm-up and the subscribers' connections are outside it. One untimed direct run warms the JIT up; then
 * {@code --rounds} rounds of (direct, server, server with subscribers) and a last direct run, so that every server run
 * lies between two direct runs whose mean is its baseline: the overhead is the median over rounds of
 * {@code baseline / server − 1}, which cancels a drift in the machine's load and ignores a round hit by a burst of it.
 * The subscribers are one NIO selector thread in a JVM of their own ({@link SseSubscribersProcess}), one JVM for all
 * rounds, warmed up before the first job and connected to each job before its step W; each must receive every step
 * and the end, all the same bytes, or the benchmark fails.
 */
@Command(name = "server", mixinStandardHelpOptions = true,
        description = {"Steady-state steps/s of training through the server (0 and N SSE subscribers) against the "
                + "direct loop; JSON.",
                "Each run: (steps - warmup) / (end of the last step - end of step warmup), step ends timed in this JVM "
                        + "(direct: after Trainer.step; server: as the step event is logged). Rounds of (direct, "
                        + "server, server + subscribers), then one more direct run; overhead = median over rounds of "
                        + "(mean of the direct runs before and after) / server - 1. Subscribers: one NIO thread in a "
                        + "separate JVM, connected before step warmup, each checked to receive every step and the end."})
final class ServerBenchCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN = "bench-server-token-0123456789";
    private static final Duration WAIT = Duration.ofMinutes(10);

    @Option(names = "--config", paramLabel = "FILE", description = "YAML configuration (default: the built-in demo model).")
    Path config;

    @Option(names = "--steps", defaultValue = "20", description = "Optimizer steps per run (default ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--warmup", defaultValue = "5",
            description = "First steps of each run left out of its rate (default ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--rounds", defaultValue = "5", description = "Rounds of the three runs, interleaved (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--subscribers", defaultValue = "500", description = "SSE clients of the streamed run (default ${DEFAULT-VALUE}).")
    int subscribers;

    @Option(names = "--read-interval-ms", defaultValue = "0", description = "Subscribers read every this many ms "
            + "(0: as events arrive; default ${DEFAULT-VALUE}).")
    long readIntervalMs;

    @Option(names = "--event-batch-ms", paramLabel = "MS", description = "The server's server.event_batch_ms "
            + "(default: the configuration's default, ${DEFAULT-VALUE}; 0: each event sent at once).")
    long eventBatchMs = ServerConfig.defaults().eventBatchMs();

    @Override
    public Integer call() throws Exception {
        if (warmup < 1 || steps <= warmup || subscribers < 0 || rounds < 1) {
            throw new IllegalArgumentException("need --warmup >= 1, --steps > --warmup, --subscribers >= 0 and "
                    + "--rounds >= 1, got " + warmup + ", " + steps + ", " + subscribers + " and " + rounds);
        }
        if (eventBatchMs < 0 || eventBatchMs > 3_600_000) {
            throw new IllegalArgumentException("--event-batch-ms must be in [0, 3600000], got " + eventBatchMs);
        }
        KdapackConfig base = ConfigLoader.load(config);
        Path dataset = DatasetPaths.trainPrefix(base.train().data().prefix());
        Map<String, Object> document = document(base, dataset.getFileName().toString());
        KdapackConfig run = ConfigLoader.fromDocument(document);
        Path work = Files.createTempDirectory("kdapack-bench-server");
        try {
            direct(run, dataset, work.resolve("jit-warm-up"));
            List<Run> direct = new ArrayList<>();
            List<Run> quiet = new ArrayList<>();
            List<Run> streamed = new ArrayList<>();
            ServerSettings settings = new ServerSettings("127.0.0.1", 0, TOKEN, work.resolve("token"), 1 << 20,
                    dataset.getParent(), Duration.ofMillis(eventBatchMs), Duration.ofSeconds(30), 16,
                    PipelineSettings.DEFAULT);
            try (KdapackServer server = KdapackServer.start(settings, TOKEN, new TrainingJobFactory(
                    new DataRoot(dataset.getParent()), work.resolve("jobs"), HybridModels.FACTORY));
                 Subscribers followers = subscribers == 0 ? null
                         : new Subscribers(server.address(), subscribers, steps, readIntervalMs)) {
                for (int round = 0; round < rounds; round++) {
                    direct.add(direct(run, dataset, work.resolve("direct-" + round)));
                    quiet.add(throughServer(server, document, null));
                    if (followers != null) {
                        streamed.add(throughServer(server, document, followers));
                    }
                }
                direct.add(direct(run, dataset, work.resolve("direct-" + rounds)));
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("steps", steps);
            out.put("warmup_steps", warmup);
            out.put("rounds", rounds);
            out.put("tokens_per_step", (long) run.train().globalBatchSize() * run.train().seqLength());
            out.put("threads", run.train().threads() > 0 ? run.train().threads() : Runtime.getRuntime().availableProcessors());
            out.put("direct_steps_per_s", rates(direct));
            out.put("server_steps_per_s", rates(quiet));
            out.put("overhead_server", medianOverhead(direct, quiet, r -> 1 / r.stepsPerSecond()));
            out.put("cpu_overhead_server", medianOverhead(direct, quiet, Run::cpuSecondsPerStep));
            if (subscribers > 0) {
                out.put("server_subscribers", subscribers);
                out.put("subscriber_read_interval_ms", readIntervalMs);
                out.put("event_batch_ms", eventBatchMs);
                out.put("server_streamed_steps_per_s", rates(streamed));
                out.put("overhead_server_streamed", medianOverhead(direct, streamed, r -> 1 / r.stepsPerSecond()));
                out.put("cpu_overhead_server_streamed", medianOverhead(direct, streamed, Run::cpuSecondsPerStep));
                out.put("streaming_cpu_share", median(streamed.stream()
                        .mapToDouble(r -> r.streamingCpuSecondsPerStep() / r.cpuSecondsPerStep())));
            }
            Map<String, Double> cpu = new LinkedHashMap<>();
            cpu.put("direct", median(direct.stream().mapToDouble(Run::cpuSecondsPerStep)));
            cpu.put("server", median(quiet.stream().mapToDouble(Run::cpuSecondsPerStep)));
            if (subscribers > 0) {
                cpu.put("server_streamed", median(streamed.stream().mapToDouble(Run::cpuSecondsPerStep)));
            }
            out.put("median_cpu_seconds_per_step", cpu);
            System.out.println(JSON.writeValueAsString(out));
        } finally {
            deleteTree(work);
        }
        return 0;
    }

    /**
     * One run's steady state: steps/s, and CPU seconds per step of this JVM (and of the subscribers' JVM, when there is
     * one) over the same steps: the cost in CPU, which another process's load on the machine hardly changes; and the
     * part of it spent streaming (the server's HTTP worker threads and the subscribers' JVM; 0 for the direct loop).
     */
    private record Run(double stepsPerSecond, double cpuSecondsPerStep, double streamingCpuSecondsPerStep) {
    }

    private static List<Double> rates(List<Run> runs) {
        return runs.stream().map(Run::stepsPerSecond).toList();
    }

    /**
     * The median over rounds of {@code server cost / baseline cost − 1} (cost: seconds or CPU seconds per step), the
     * baseline of round {@code r} being the mean of the direct runs just before and just after it (so that a drift of
     * the machine's load cancels).
     */
    private static double medianOverhead(List<Run> direct, List<Run> server, ToDoubleFunction<Run> cost) {
        return median(IntStream.range(0, server.size()).mapToDouble(r -> cost.applyAsDouble(server.get(r))
                / ((cost.applyAsDouble(direct.get(r)) + cost.applyAsDouble(direct.get(r + 1))) / 2) - 1));
    }

    private static double median(DoubleStream values) {
        return InterleavedTiming.median(values.toArray());
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

    /** Steady state of the direct loop. */
    private Run direct(KdapackConfig run, Path dataset, Path checkpoints) throws IOException {
        long[] stepEnds = new long[steps];
        long[] cpu = new long[steps];
        try (Trainer trainer = Trainer.create(run, HybridModels.FACTORY, dataset, checkpoints)) {
            for (int i = 0; i < steps; i++) {
                trainer.step();
                stepEnds[i] = System.nanoTime();
                cpu[i] = processCpuNanos();
            }
            trainer.saveCheckpoint();
        }
        return steadyState(stepEnds, cpu, new long[steps]);
    }

    /**
     * Over steps {@code W+1 … N}: {@code (N − W) / (t_N − t_W)}, and the CPU time ({@code cpu}) and streaming CPU time
     * ({@code streaming}) they took per step.
     */
    private Run steadyState(long[] stepEnds, long[] cpu, long[] streaming) {
        int first = warmup - 1;
        int last = steps - 1;
        return new Run((steps - warmup) / ((stepEnds[last] - stepEnds[first]) / 1e9),
                (cpu[last] - cpu[first]) / 1e9 / (steps - warmup),
                (streaming[last] - streaming[first]) / 1e9 / (steps - warmup));
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Steady state of a job of {@code server} with {@code followers} (null: none) following it. */
    private Run throughServer(KdapackServer server, Map<String, Object> document, Subscribers followers)
            throws Exception {
        InetSocketAddress address = server.address();
        String id = createJob(address, document);
        JobEventLog log = server.jobs().get(id).toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS)
                .orElseThrow(() -> new IOException("job " + id + " is not known to the server")).events();
        StepClock clock = new StepClock(log, steps, followers);
        if (clock.untimed() >= warmup) {
            throw new IOException("the job ran " + clock.untimed() + " steps before it could be timed; raise --warmup");
        }
        if (followers != null) {
            int before = followers.follow(id, log);
            if (before >= warmup) {
                throw new IOException("the subscribers connected after step " + before + "; raise --warmup");
            }
        }
        EndEvent end = clock.awaitEnd();
        if (end.state() != JobState.SUCCEEDED) {
            throw new IOException("job " + id + " ended " + end);
        }
        if (followers != null) {
            followers.requireAllComplete();
        }
        return clock.steadyState();
    }

    private static String createJob(InetSocketAddress address, Map<String, Object> document) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpResponse<String> created = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + address.getPort() + "/v1/jobs")).timeout(WAIT)
                .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(document))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (created.statusCode() != 201) {
            throw new IOException("POST /v1/jobs answered " + created.statusCode() + ": " + created.body());
        }
        return JSON.readTree(created.body()).get("id").asText();
    }

    /**
     * Times the end of each step as the job's event log records it (the listener runs on the log's writer), with the
     * CPU time so far of this JVM plus the subscribers' JVM, and of the streaming (HTTP workers plus the subscribers'
     * JVM; taken only when there are subscribers).
     */
    private final class StepClock {
        private final JobEventLog log;
        private final Subscribers followers;
        private final long[] stepEnds;
        private final long[] cpu;
        private final long[] streaming;
        private final int untimed;
        private final CountDownLatch ended = new CountDownLatch(1);
        private int timed;

        StepClock(JobEventLog log, int steps, Subscribers followers) {
            this.log = log;
            this.followers = followers;
            this.stepEnds = new long[steps];
            this.cpu = new long[steps];
            this.streaming = new long[steps];
            synchronized (this) {
                log.subscribe(this::onChange);
                untimed = log.size();
                timed = untimed;
                if (log.end().isPresent()) {
                    ended.countDown();
                }
            }
        }

        private synchronized void onChange() {
            long now = System.nanoTime();
            int size = Math.min(log.size(), stepEnds.length);
            long cpuNow = 0;
            long streamingNow = 0;
            if (timed < size) {
                long subscribersCpu = followers == null ? 0 : followers.cpuNanos(); // one read of its /proc entry
                cpuNow = processCpuNanos() + subscribersCpu;
                streamingNow = followers == null ? 0 : ThreadCpu.httpWorkers() + subscribersCpu;
            }
            for (; timed < size; timed++) {
                stepEnds[timed] = now;
                cpu[timed] = cpuNow;
                streaming[timed] = streamingNow;
            }
            if (log.end().isPresent()) {
                ended.countDown();
            }
        }

        int untimed() {
            return untimed;
        }

        EndEvent awaitEnd() throws Exception {
            if (!ended.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new IOException("the job did not end within " + WAIT);
            }
            return log.end().orElseThrow();
        }

        synchronized Run steadyState() {
            return ServerBenchCommand.this.steadyState(stepEnds, cpu, streaming);
        }
    }

    /**
     * The subscribers' JVM ({@link SseSubscribersProcess}): one for all the streamed runs, started and warmed up before
     * the first job, so that neither its start-up nor its JIT is timed.
     */
    private static final class Subscribers implements AutoCloseable {
        private final Process process;
        private final BufferedReader out;
        private final Writer in;
        private final int count;

        Subscribers(InetSocketAddress server, int count, int steps, long readIntervalMs) throws IOException {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            process = new ProcessBuilder(List.of(java, "-XX:+UseSerialGC", "-Xmx256m",
                    "-cp", System.getProperty("java.class.path"), SseSubscribersProcess.class.getName(),
                    "127.0.0.1", Integer.toString(server.getPort()), TOKEN, Integer.toString(count),
                    Integer.toString(steps), Long.toString(readIntervalMs)))
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = process.outputWriter(StandardCharsets.UTF_8);
            this.count = count;
            expect("ready"); // its JIT warm-up done before the first job starts
        }

        /** Connects every subscriber to job {@code id}; returns the steps the job had logged once they all were. */
        int follow(String id, JobEventLog log) throws IOException {
            in.write(id + "\n");
            in.flush();
            expect("connected");
            return log.size();
        }

        /** CPU time the subscribers' JVM has used so far. */
        long cpuNanos() {
            return process.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
        }

        void requireAllComplete() throws Exception {
            String result = expect("result");
            if (!result.startsWith("result " + count + " " + count + " 1 ")) {
                throw new IOException("not every subscriber received every step and the end, the same bytes: "
                        + result);
            }
        }

        private String expect(String prefix) throws IOException {
            String line = out.readLine();
            if (line == null || !line.startsWith(prefix)) {
                throw new IOException("the subscribers' process said '" + line + "', expected " + prefix);
            }
            return line;
        }

        /** Ends the subscribers' JVM (end of its input), or kills it if it does not exit. */
        @Override
        public void close() throws IOException, InterruptedException {
            in.close();
            if (!process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
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
