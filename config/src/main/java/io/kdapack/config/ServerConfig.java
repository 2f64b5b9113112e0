package io.kdapack.config;

/**
 * The HTTP server ({@code server}; the whole section is optional).
 *
 * @param host         bind address
 * @param port         TCP port; 0: an ephemeral port
 * @param token        bearer token; {@code null}: generated at start and written to {@code tokenFile}
 * @param tokenFile    where a generated token is written (readable only by the user)
 * @param maxBodyBytes largest accepted request body
 * @param dataRoot     dataset paths in requests must lie under this directory
 * @param eventBatchMs shortest time between two sends of new events on one event stream, in milliseconds: events
 *                     that come sooner wait and go out together (0: each event at once)
 * @param memoryBudget  bytes of heap that the running jobs' estimated memory may take together; 0: 60 % of the
 *                      JVM's maximum heap
 * @param maxRunningJobs jobs that train at once; further jobs wait in state {@code queued}
 * @param maxQueuedJobs  jobs that may wait; beyond that a new job is refused with 429
 * @param maxConnections open HTTP connections, all clients together; further connections are closed at once
 * @param maxConnectionsPerAddress open HTTP connections from one client IP address
 * @param idleTimeoutMs  a connection with no request in progress (and no event stream) is closed after this long
 * @param requestTimeoutMs a request's head and body must arrive within this long of its first byte (else 408)
 * @param maxStepTokens  largest batch of {@code POST /v1/steps}, in tokens (B·T)
 * @param inference      the bounds of {@code POST /v1/completions} ({@code server.inference})
 */
public record ServerConfig(String host, int port, String token, String tokenFile, long maxBodyBytes, String dataRoot,
                           long eventBatchMs, long memoryBudget, int maxRunningJobs, int maxQueuedJobs,
                           int maxConnections, int maxConnectionsPerAddress, long idleTimeoutMs, long requestTimeoutMs,
                           int maxStepTokens, InferenceConfig inference) {

    public static ServerConfig defaults() {
        return new ServerConfig("127.0.0.1", 8080, null, "runs/server-token", 16L << 20, ".", 1000,
                0, 2, 8, 2048, 1024, 60_000, 30_000, 32_768, InferenceConfig.defaults());
    }
}
