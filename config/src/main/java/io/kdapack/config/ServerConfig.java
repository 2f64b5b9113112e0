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
 */
public record ServerConfig(String host, int port, String token, String tokenFile, long maxBodyBytes, String dataRoot,
                           long eventBatchMs) {

    public static ServerConfig defaults() {
        return new ServerConfig("127.0.0.1", 8080, null, "runs/server-token", 16L << 20, ".", 1000);
    }
}
