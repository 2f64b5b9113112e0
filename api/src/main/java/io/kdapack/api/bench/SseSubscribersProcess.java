package io.kdapack.api.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * {@link SseSubscribers} in a JVM of their own, so that a benchmark's clients do not share the server's heap, JIT and
 * safepoints. Arguments: {@code HOST PORT TOKEN COUNT EXPECTED_STEPS
 * READ_INTERVAL_MS}; warms its parser up ({@link SseSubscribers#warmUp}) and prints {@code ready}, reads the job id from
 * the first line of standard input, prints {@code connected} once every stream has its response head, then, when every stream has ended, one
 * line {@code result <complete> <count> <distinct CRCs> <first failure or ->} and exits (0 when all are complete and
 * received the same bytes).
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
        SseSubscribers.warmUp();
        System.out.println("ready");
        System.out.flush();
        String jobId = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        Duration readInterval = Duration.ofMillis(Long.parseLong(args[5]));
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
            System.exit(complete == count && crcs == 1 ? 0 : 1);
        }
    }
}
