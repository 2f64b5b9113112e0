package io.kdapack.bench.cluster;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.actors.cluster.parallel.RankEvent;
import io.kdapack.actors.cluster.parallel.RankRunner;
import io.kdapack.config.KdapackConfig;
import io.kdapack.training.StepResult;
import io.kdapack.training.StepTiming;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * {@code kdapack bench cluster}: the same data-parallel configuration ({@code train.data_parallel = 2}) trained by two
 * worker JVMs joined to this one over loopback Artery, against one worker JVM that runs both blocks itself.
 *
 * <p>Method: rounds of (one worker, two workers), interleaved so that a drift in the machine's load touches both alike;
 * each run starts fresh JVMs. Per step, each rank reports (its {@code StepTiming}) compute (forward, backward, block
 * sums, optimizer), waiting (blocked until the other rank was ready: all-gathers and the start of the exchange) and
 * exchange (the gradient's two passes once both were ready), and the gradient bytes it sent and received. The
 * steady-state step time of a run is the median of the intervals between consecutive step reports of rank 0 (one
 * worker: its step lines) after the first {@code warmup} steps, taken in this JVM as they arrive; speedup = one-worker
 * step / two-worker step, efficiency = speedup / 2. Every run's losses and gradient norms must be the same bits (the
 * benchmark fails otherwise), which also checks that the two-worker run is the single-JVM run.
 */
public final class ClusterBenchmark {
    private static final Duration WAIT = Duration.ofMinutes(10);

    /**
     * @param config      the run (data_parallel 2, threads per worker, steps), already validated
     * @param configFile  the same configuration as a file the workers load
     * @param warmup      first steps left out of the step time
     * @param rounds      rounds of (one worker, two workers)
     * @param javaOptions extra JVM options of the workers (e.g. {@code --add-modules jdk.incubator.vector})
     */
    public record Settings(KdapackConfig config, Path configFile, int warmup, int rounds, List<String> javaOptions) {
    }

    private ClusterBenchmark() {
    }

    public static Map<String, Object> run(Settings settings) throws Exception {
        List<Run> one = new ArrayList<>();
        List<Run> two = new ArrayList<>();
        BlockingQueue<RankEvent> events = new LinkedBlockingQueue<>();
        ActorSystem<RankEvent> listener = ActorSystem.create(Behaviors.receiveMessage(e -> {
            events.add(e);
            return Behaviors.same();
        }), "kdapack", ClusterWorkerProcess.memberConfig(null));
        try {
            Cluster.get(listener).manager().tell(org.apache.pekko.cluster.typed.Join.create(
                    Cluster.get(listener).selfMember().address()));
            for (int round = 0; round < settings.rounds(); round++) {
                one.add(oneWorker(settings));
                two.add(twoWorkers(settings, listener, events, "bench-" + round));
            }
        } finally {
            listener.terminate();
            listener.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        String reference = one.getFirst().losses;
        for (Run run : concat(one, two)) {
            if (!run.losses.equals(reference)) {
                throw new IllegalStateException("a run's losses differ from the first one-worker run's:\n" + reference
                        + "\n" + run.losses);
            }
        }
        KdapackConfig c = settings.config();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bench", "cluster");
        out.put("steps", c.train().steps());
        out.put("warmup", settings.warmup());
        out.put("rounds", settings.rounds());
        out.put("data_parallel", c.train().dataParallel());
        out.put("num_microbatches", c.train().numMicrobatches());
        out.put("micro_batch_size", c.train().microBatchSize());
        out.put("seq_length", c.train().seqLength());
        out.put("threads_per_worker", c.train().threads());
        long gradientBytes = two.getFirst().ranks.getFirst().getFirst().bytesSent();
        out.put("gradient_bytes", gradientBytes);
        double oneStep = median(one.stream().map(r -> r.stepMs).toList());
        double twoStep = median(two.stream().map(r -> r.stepMs).toList());
        Map<String, Object> oneOut = new LinkedHashMap<>();
        oneOut.put("step_ms", oneStep);
        oneOut.put("compute_ms", median(one.stream().map(r -> r.phaseMs(0, StepTiming::computeNanos)).toList()));
        oneOut.put("step_ms_per_round", one.stream().map(r -> r.stepMs).toList());
        out.put("one_worker", oneOut);
        Map<String, Object> twoOut = new LinkedHashMap<>();
        twoOut.put("step_ms", twoStep);
        for (int r = 0; r < 2; r++) {
            int rank = r;
            Map<String, Object> rankOut = new LinkedHashMap<>();
            rankOut.put("compute_ms", median(two.stream().map(x -> x.phaseMs(rank, StepTiming::computeNanos)).toList()));
            rankOut.put("wait_ms", median(two.stream().map(x -> x.phaseMs(rank, StepTiming::waitNanos)).toList()));
            rankOut.put("exchange_ms", median(two.stream().map(x -> x.phaseMs(rank, StepTiming::exchangeNanos)).toList()));
            rankOut.put("bytes_sent_per_step", two.getFirst().ranks.get(rank).getFirst().bytesSent());
            rankOut.put("bytes_received_per_step", two.getFirst().ranks.get(rank).getFirst().bytesReceived());
            twoOut.put("rank" + r, rankOut);
        }
        double exchangeMs = median(two.stream().map(x -> x.phaseMs(0, StepTiming::exchangeNanos)).toList());
        twoOut.put("exchange_gbit_per_s", exchangeMs > 0 ? 2.0 * gradientBytes * 8 / (exchangeMs * 1e6) : null);
        twoOut.put("step_ms_per_round", two.stream().map(r -> r.stepMs).toList());
        out.put("two_workers", twoOut);
        out.put("speedup", oneStep / twoStep);
        out.put("efficiency", oneStep / twoStep / 2);
        out.put("bit_identical", true);
        return out;
    }

    /** One run's steady-state step time, per-rank timings after warm-up, and its losses (for the bitwise check). */
    private record Run(double stepMs, List<List<StepTiming>> ranks, String losses) {
        double phaseMs(int rank, java.util.function.ToLongFunction<StepTiming> phase) {
            return median(ranks.get(rank).stream().map(t -> phase.applyAsLong(t) / 1e6).toList());
        }
    }

    private static Run oneWorker(Settings settings) throws Exception {
        Process process = start(settings, List.of("local", settings.configFile().toString()));
        List<Long> arrivals = new ArrayList<>();
        List<StepTiming> timings = new ArrayList<>();
        StringBuilder losses = new StringBuilder();
        ObjectMapper json = new ObjectMapper();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (!line.startsWith("step ")) {
                    continue;
                }
                arrivals.add(System.nanoTime());
                String[] parts = line.split(" ", 4);
                timings.add(new StepTiming(Long.parseLong(parts[2]), 0, 0, 0, 0));
                Map<?, ?> step = json.readValue(parts[3], Map.class);
                losses.append(step.get("loss")).append(' ').append(step.get("mtp_loss")).append(' ')
                        .append(step.get("grad_norm")).append('\n');
            }
        }
        if (!process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IllegalStateException("the one-worker run failed (exit " + process.exitValue() + ")");
        }
        int steps = settings.config().train().steps();
        if (arrivals.size() != steps) {
            throw new IllegalStateException("the one-worker run reported " + arrivals.size() + " of " + steps + " steps");
        }
        return new Run(stepMs(arrivals, settings.warmup()), List.of(timings.subList(settings.warmup(), steps)),
                losses.toString());
    }

    private static Run twoWorkers(Settings settings, ActorSystem<RankEvent> listener, BlockingQueue<RankEvent> events,
                                  String job) throws Exception {
        Path checkpoints = Files.createTempDirectory("kdapack-bench-cluster");
        String seed = "127.0.0.1:" + Cluster.get(listener).selfMember().address().getPort().get();
        String listenerRef = ActorRefResolver.get(listener).toSerializationFormat(listener);
        List<Process> workers = new ArrayList<>();
        try {
            for (int r = 0; r < 2; r++) {
                workers.add(start(settings, List.of("rank", seed, settings.configFile().toString(),
                        checkpoints.toString(), job, Integer.toString(r), listenerRef)));
            }
            List<ActorRef<RankRunner.Command>> ranks = find(listener, job);
            for (ActorRef<RankRunner.Command> rank : ranks) {
                rank.tell(new RankRunner.Peers(ranks));
            }
            int steps = settings.config().train().steps();
            List<Long> arrivals = new ArrayList<>();
            List<List<StepTiming>> timings = List.of(new ArrayList<>(), new ArrayList<>());
            StringBuilder losses = new StringBuilder();
            int finished = 0;
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (finished < 2) {
                RankEvent event = events.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (event == null) {
                    throw new IllegalStateException("the two-worker run reported nothing within " + WAIT);
                }
                switch (event) {
                    case RankEvent.Failed f -> throw new IllegalStateException("rank " + f.rank() + " failed: " + f.reason());
                    case RankEvent.Finished f -> finished++;
                    case RankEvent.StepDone d -> {
                        timings.get(d.rank()).add(d.timing());
                        if (d.rank() == 0) {
                            arrivals.add(System.nanoTime());
                            StepResult r = d.result();
                            losses.append(r.loss()).append(' ').append(r.mtpLoss()).append(' ').append(r.gradNorm())
                                    .append('\n');
                        }
                    }
                    default -> {
                    }
                }
            }
            for (Process worker : workers) {
                if (!worker.waitFor(60, TimeUnit.SECONDS)) {
                    worker.destroyForcibly();
                }
            }
            return new Run(stepMs(arrivals, settings.warmup()), List.of(timings.get(0).subList(settings.warmup(), steps),
                    timings.get(1).subList(settings.warmup(), steps)), losses.toString());
        } finally {
            workers.forEach(Process::destroyForcibly);
            deleteTree(checkpoints);
        }
    }

    /** The job's two runners from the receptionist, in rank order (by name {@code rank-r}). */
    private static List<ActorRef<RankRunner.Command>> find(ActorSystem<?> system, String job) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (System.nanoTime() < deadline) {
            Receptionist.Listing listing = AskPattern.<Receptionist.Command, Receptionist.Listing>ask(system.receptionist(),
                    replyTo -> Receptionist.find(ClusterWorkerProcess.serviceKey(job), replyTo), Duration.ofSeconds(5),
                    system.scheduler()).toCompletableFuture().get();
            Set<ActorRef<RankRunner.Command>> found = listing.getServiceInstances(ClusterWorkerProcess.serviceKey(job));
            if (found.size() == 2) {
                return found.stream().sorted(Comparator.comparing(r -> r.path().name())).toList();
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the two workers of " + job + " did not register within 2 minutes");
    }

    private static Process start(Settings settings, List<String> args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(settings.javaOptions());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(ClusterWorkerProcess.class.getName());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        if (args.getFirst().equals("rank")) {
            builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        }
        return builder.start();
    }

    /** Median of the step-to-step intervals after {@code warmup} steps, in ms. */
    private static double stepMs(List<Long> arrivals, int warmup) {
        List<Double> intervals = new ArrayList<>();
        for (int i = warmup; i < arrivals.size(); i++) {
            intervals.add((arrivals.get(i) - arrivals.get(i - 1)) / 1e6);
        }
        return median(intervals);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static List<Run> concat(List<Run> a, List<Run> b) {
        List<Run> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
