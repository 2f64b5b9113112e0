package io.kdapack.bench.server;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * {@link SseSubscribers} in a JVM of their own, so that a benchmark's clients do not share the server's heap, JIT and
 * safepoints. Arguments: {@code HOST PORT TOKEN COUNT EXPECTED_STEPS
 * READ_INTERVAL_MS}; warms its parser up ({@link SseSubscribers#warmUp}) and prints {@code ready}, then, for each job id
 * read from a line of standard input (until its end), connects every subscriber to that job's stream, prints
 * {@code connected} once every stream has its response head and, when every stream has ended, one line
 * {@code result <complete> <count> <distinct CRCs> <first failure or ->}. One JVM serves all the jobs of a benchmark,
 * so that it is warm from the second on.
 */
public final class SseSubscribersProcess {
    private static final Duration WAIT = Duration.ofMinutes(10);

    private SseSubscribersProcess() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: SseSubscribersProcess HOST PORT TOKEN COUNT EXPECTED_STEPS READ_INTERVAL_MS");
            System.exit(2);
        }
        InetSocketAddress server = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        int count = Integer.parseInt(args[3]);
        long expectedSteps = Long.parseLong(args[4]);
        Duration readInterval = Duration.ofMillis(Long.parseLong(args[5]));
        SseSubscribers.warmUp();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String jobId = in.readLine(); jobId != null; jobId = in.readLine()) {
            try (SseSubscribers subscribers = SseSubscribers.connect(server, args[2], jobId, count, readInterval)) {
                subscribers.awaitConnected(WAIT);
                System.out.println("connected");
                System.out.flush();
                List<SseSubscribers.Stream> streams = subscribers.awaitEnd(WAIT);
                long complete = streams.stream().filter(s -> s.complete(expectedSteps)).count();
                long crcs = streams.stream().mapToLong(SseSubscribers.Stream::crc).distinct().count();
                String failure = streams.stream().filter(s -> !s.complete(expectedSteps)).findFirst()
                        .map(Object::toString).orElse("-");
                System.out.println("result " + complete + " " + count + " " + crcs + " " + failure);
                System.out.flush();
            }
        }
    }
}
