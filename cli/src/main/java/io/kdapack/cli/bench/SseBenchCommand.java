package io.kdapack.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobState;
import io.kdapack.api.http.EventStreamHandler;
import io.kdapack.api.http.HttpApiServer;
import io.kdapack.api.http.ResponseMetricsHandler;
import io.kdapack.api.http.SseFrames;
import io.kdapack.bench.InterleavedTiming;
import io.kdapack.bench.server.SseSubscribers;
import io.kdapack.bench.server.ThreadCpu;
import io.kdapack.config.ServerConfig;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kdapack bench sse}: the CPU that event streaming costs per subscriber and event, without training around it.
 * The server's HTTP layer ({@link HttpApiServer}, the HTTP codec, {@link ResponseMetricsHandler},
 * {@link EventStreamHandler}) streams a run's event log to {@code --subscribers} {@link SseSubscribers} (one NIO thread,
 * this JVM, reading as events arrive); a step event is appended every {@code --interval-ms}, and each stream sends at
 * most once per {@code --event-batch-ms}. Per round, the CPU time of the server's event-loop threads and of the
 * subscribers' thread over the appends and the last batch, divided by subscribers × events;
 * the median over {@code --rounds} rounds after one warm-up round. Every subscriber must receive every event.
 */
@Command(name = "sse", mixinStandardHelpOptions = true,
        description = {"CPU per subscriber and event of the server's SSE streams alone (no training); JSON.",
                "Per round: event-loop and subscriber-thread CPU time over --events appends, / (subscribers x events); "
                        + "median over rounds, after one warm-up round."})
final class SseBenchCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration WAIT = Duration.ofMinutes(2);

    @Option(names = "--subscribers", defaultValue = "500", description = "SSE clients (default ${DEFAULT-VALUE}).")
    int subscribers;

    @Option(names = "--events", defaultValue = "100", description = "Step events per round (default ${DEFAULT-VALUE}).")
    int events;

    @Option(names = "--interval-ms", defaultValue = "50", description = "Time between events (default ${DEFAULT-VALUE}).")
    long intervalMs;

    @Option(names = "--rounds", defaultValue = "5", description = "Measured rounds (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--event-batch-ms", paramLabel = "MS", description = "The server's server.event_batch_ms "
            + "(default: the configuration's default, ${DEFAULT-VALUE}; 0: each event sent at once).")
    long eventBatchMs = ServerConfig.defaults().eventBatchMs();

    /** The run being streamed: a connection's request gets a stream of it. */
    private volatile JobEventLog log;
    private volatile SseFrames frames;

    @Override
    public Integer call() throws Exception {
        if (subscribers < 1 || events < 1 || intervalMs < 1 || rounds < 1) {
            throw new IllegalArgumentException("need --subscribers, --events, --interval-ms and --rounds >= 1, got "
                    + subscribers + ", " + events + ", " + intervalMs + " and " + rounds);
        }
        if (eventBatchMs < 0 || eventBatchMs > 3_600_000) {
            throw new IllegalArgumentException("--event-batch-ms must be in [0, 3600000], got " + eventBatchMs);
        }
        SseSubscribers.warmUp();
        List<double[]> perRound = new ArrayList<>(); // {server, subscribers, total} µs per subscriber-event
        try (HttpApiServer server = HttpApiServer.start("127.0.0.1", 0, new StreamInitializer())) {
            for (int round = 0; round <= rounds; round++) {
                double[] cost = round(server);
                if (round > 0) {
                    perRound.add(cost);
                }
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("subscribers", subscribers);
        out.put("events", events);
        out.put("interval_ms", intervalMs);
        out.put("event_batch_ms", eventBatchMs);
        out.put("rounds", rounds);
        out.put("server_cpu_us_per_subscriber_event", median(perRound, 0));
        out.put("subscriber_cpu_us_per_subscriber_event", median(perRound, 1));
        out.put("total_cpu_us_per_subscriber_event", median(perRound, 2));
        System.out.println(JSON.writeValueAsString(out));
        return 0;
    }

    /** One round: {server, subscribers, total} CPU µs per subscriber-event. */
    private double[] round(HttpApiServer server) throws Exception {
        log = new JobEventLog(events);
        frames = new SseFrames();
        try (SseSubscribers clients = SseSubscribers.connect(server.address(), "-", "-", subscribers, Duration.ZERO)) {
            clients.awaitConnected(WAIT);
            Thread.sleep(intervalMs);
            Map<String, Long> before = cpuByRole();
            for (int step = 1; step <= events; step++) {
                log.append(new StepEvent(step, 2.0 / step, null, 1024, 17, 1.5, 3e-4, 5000.0));
                Thread.sleep(intervalMs);
            }
            Thread.sleep(eventBatchMs); // the last batch goes out
            Map<String, Long> after = cpuByRole(); // before the end: the subscribers' thread ends with it
            log.end(new EndEvent(JobState.SUCCEEDED, events, null));
            List<SseSubscribers.Stream> streams = clients.awaitEnd(WAIT);
            if (!streams.stream().allMatch(s -> s.complete(events))) {
                throw new IllegalStateException("a subscriber missed events: " + streams.stream()
                        .filter(s -> !s.complete(events)).findFirst().orElseThrow());
            }
            double perEvent = 1e3 * subscribers * events; // ns → µs per subscriber-event
            double serverUs = (after.get("server") - before.get("server")) / perEvent;
            double clientUs = (after.get("subscribers") - before.get("subscribers")) / perEvent;
            return new double[] {serverUs, clientUs, serverUs + clientUs};
        }
    }

    /** CPU nanoseconds so far of the server's event loops and of the subscribers' thread. */
    private static Map<String, Long> cpuByRole() {
        return Map.of("server", ThreadCpu.httpWorkers(),
                "subscribers", ThreadCpu.nanos(SseSubscribers.THREAD_NAME::equals));
    }

    private static double median(List<double[]> rows, int column) {
        return InterleavedTiming.median(rows.stream().mapToDouble(row -> row[column]).toArray());
    }

    /** The server's outbound pipeline (codec, response metrics); a request's end turns the connection into a stream. */
    private final class StreamInitializer extends ChannelInitializer<Channel> {
        @Override
        protected void initChannel(Channel channel) {
            channel.pipeline().addLast("codec", new HttpServerCodec());
            channel.pipeline().addLast("response-metrics", new ResponseMetricsHandler(status -> { }));
            channel.pipeline().addLast("request", new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object message) {
                    boolean requestEnds = message instanceof LastHttpContent;
                    ReferenceCountUtil.release(message);
                    if (requestEnds) {
                        ctx.pipeline().replace(this, "events",
                                new EventStreamHandler(log, frames, 0, Duration.ofMillis(eventBatchMs)));
                    }
                }
            });
        }
    }
}
