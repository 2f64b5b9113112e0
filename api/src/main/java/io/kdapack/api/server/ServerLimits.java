package io.kdapack.api.server;

import io.kdapack.config.ServerConfig;
import java.time.Duration;

/**
 * What one server lets its clients and jobs consume (docs/configuration.md, {@code server.*}).
 *
 * @param memoryBudget             heap bytes the running jobs' estimated memory may take together
 * @param maxRunningJobs           jobs that train at once
 * @param maxQueuedJobs            jobs that may wait for a slot ({@code queued}); beyond that 429
 * @param maxConnections           open HTTP connections in all
 * @param maxConnectionsPerAddress open HTTP connections from one client IP address
 * @param idleTimeout              a connection without a request in progress or an event stream is closed after this
 * @param requestTimeout           a request's head and body must arrive within this of its first byte (else 408)
 * @param maxStepTokens            largest {@code POST /v1/steps} batch in tokens (B·T)
 */
public record ServerLimits(long memoryBudget, int maxRunningJobs, int maxQueuedJobs, int maxConnections,
                           int maxConnectionsPerAddress, Duration idleTimeout, Duration requestTimeout,
                           int maxStepTokens) {

    /** Share of the JVM's maximum heap that {@code server.memory_budget: 0} stands for. */
    public static final double DEFAULT_HEAP_FRACTION = 0.6;

    public ServerLimits {
        if (memoryBudget < 1) {
            throw new IllegalArgumentException("server.memory_budget must be >= 1 byte, got " + memoryBudget);
        }
        if (maxRunningJobs < 1) {
            throw new IllegalArgumentException("server.max_running_jobs must be >= 1, got " + maxRunningJobs);
        }
        if (maxQueuedJobs < 0) {
            throw new IllegalArgumentException("server.max_queued_jobs must be >= 0, got " + maxQueuedJobs);
        }
        if (maxConnections < 1 || maxConnectionsPerAddress < 1) {
            throw new IllegalArgumentException("server.max_connections and server.max_connections_per_address must be "
                    + ">= 1, got " + maxConnections + " and " + maxConnectionsPerAddress);
        }
        if (idleTimeout.toMillis() < 1 || requestTimeout.toMillis() < 1) {
            throw new IllegalArgumentException("server.idle_timeout_ms and server.request_timeout_ms must be >= 1, got "
                    + idleTimeout.toMillis() + " and " + requestTimeout.toMillis());
        }
        if (maxStepTokens < 1) {
            throw new IllegalArgumentException("server.max_step_tokens must be >= 1, got " + maxStepTokens);
        }
    }

    /** The limits of the configuration's {@code server} section; a budget of 0 becomes 60 % of the maximum heap. */
    public static ServerLimits from(ServerConfig server) {
        long budget = server.memoryBudget() > 0 ? server.memoryBudget() : defaultMemoryBudget();
        return new ServerLimits(budget, server.maxRunningJobs(), server.maxQueuedJobs(), server.maxConnections(),
                server.maxConnectionsPerAddress(), Duration.ofMillis(server.idleTimeoutMs()),
                Duration.ofMillis(server.requestTimeoutMs()), server.maxStepTokens());
    }

    /** The defaults of {@link ServerConfig#defaults()}. */
    public static ServerLimits defaults() {
        return from(ServerConfig.defaults());
    }

    /** {@link #DEFAULT_HEAP_FRACTION} of {@code -Xmx} (or of the JVM's default maximum heap). */
    public static long defaultMemoryBudget() {
        return (long) (DEFAULT_HEAP_FRACTION * Runtime.getRuntime().maxMemory());
    }

    public ServerLimits withMemoryBudget(long bytes) {
        return new ServerLimits(bytes, maxRunningJobs, maxQueuedJobs, maxConnections, maxConnectionsPerAddress,
                idleTimeout, requestTimeout, maxStepTokens);
    }

    public ServerLimits withJobs(int running, int queued) {
        return new ServerLimits(memoryBudget, running, queued, maxConnections, maxConnectionsPerAddress, idleTimeout,
                requestTimeout, maxStepTokens);
    }

    public ServerLimits withConnections(int total, int perAddress) {
        return new ServerLimits(memoryBudget, maxRunningJobs, maxQueuedJobs, total, perAddress, idleTimeout,
                requestTimeout, maxStepTokens);
    }

    public ServerLimits withTimeouts(Duration idle, Duration request) {
        return new ServerLimits(memoryBudget, maxRunningJobs, maxQueuedJobs, maxConnections, maxConnectionsPerAddress,
                idle, request, maxStepTokens);
    }

    public ServerLimits withMaxStepTokens(int tokens) {
        return new ServerLimits(memoryBudget, maxRunningJobs, maxQueuedJobs, maxConnections, maxConnectionsPerAddress,
                idleTimeout, requestTimeout, tokens);
    }
}
