package io.kdapack.bench.server;

import io.kdapack.api.http.HttpApiServer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.function.Predicate;

/** CPU time of a role's threads in this JVM, picked by thread name, for benchmarks that split CPU by role. */
public final class ThreadCpu {

    private ThreadCpu() {
    }

    /** CPU nanoseconds so far of the live threads whose name {@code named} accepts. */
    public static long nanos(Predicate<String> named) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long total = 0;
        for (ThreadInfo thread : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (thread != null && named.test(thread.getThreadName())) {
                total += Math.max(0, threads.getThreadCpuTime(thread.getThreadId()));
            }
        }
        return total;
    }

    /** CPU nanoseconds so far of the HTTP server's connection-serving threads. */
    public static long httpWorkers() {
        return nanos(name -> name.startsWith(io.kdapack.api.http.HttpApiServer.WORKER_THREADS));
    }
}
