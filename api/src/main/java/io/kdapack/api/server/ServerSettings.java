package io.kdapack.api.server;

import io.kdapack.config.ServerConfig;
import io.kdapack.training.pipeline.PipelineSettings;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How {@code kdapack serve} listens and guards itself: the configuration's {@code server} section
 * ({@link #from}) plus the settings of the job actors.
 *
 * @param bind           address to listen on; loopback by default
 * @param port           TCP port; 0 picks a free one
 * @param token          bearer token required on every call but {@code /healthz}; null = generate one at
 *                       start and write it to {@code tokenFile}
 * @param tokenFile      where a generated token is written (owner read/write only)
 * @param maxBodyBytes   largest request body; larger ones get 413
 * @param dataRoot       directory that dataset paths in job configurations must stay inside
 * @param eventBatch     shortest time between two sends on one event stream (zero: each event at once)
 * @param askTimeout     longest an HTTP call waits on the job actors before answering 503
 * @param retainFinished finished jobs whose status and event history are kept
 * @param pipeline       actor pipeline settings of every job
 * @param limits         what clients and jobs may consume (admission, connections, timeouts, batch sizes)
 */
public record ServerSettings(String bind, int port, String token, Path tokenFile, int maxBodyBytes, Path dataRoot,
                             Duration eventBatch, Duration askTimeout, int retainFinished, PipelineSettings pipeline,
                             ServerLimits limits) {

    /** Settings with the default {@link ServerLimits}. */
    public ServerSettings(String bind, int port, String token, Path tokenFile, int maxBodyBytes, Path dataRoot,
                          Duration eventBatch, Duration askTimeout, int retainFinished, PipelineSettings pipeline) {
        this(bind, port, token, tokenFile, maxBodyBytes, dataRoot, eventBatch, askTimeout, retainFinished, pipeline,
                ServerLimits.defaults());
    }

    public ServerSettings {
        if (bind == null || bind.isBlank()) {
            throw new IllegalArgumentException("bind address must not be empty");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], got " + port);
        }
        if (token != null && token.length() < 16) {
            throw new IllegalArgumentException("server.token: a configured token must have at least 16 characters, got "
                    + token.length());
        }
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("server.max_body_bytes must be >= 1, got " + maxBodyBytes);
        }
        if (eventBatch.isNegative()) {
            throw new IllegalArgumentException("server.event_batch_ms must be >= 0, got " + eventBatch.toMillis());
        }
        if (askTimeout.isNegative() || askTimeout.isZero()) {
            throw new IllegalArgumentException("askTimeout must be positive, got " + askTimeout);
        }
        if (retainFinished < 0) {
            throw new IllegalArgumentException("retainFinished must be >= 0, got " + retainFinished);
        }
    }

    /**
     * The settings of the configuration's {@code server} section, with the server's own defaults for what the
     * configuration does not cover (ask timeout, finished jobs kept, pipeline settings).
     */
    public static ServerSettings from(ServerConfig server) {
        if (server.maxBodyBytes() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("server.max_body_bytes = " + server.maxBodyBytes()
                    + ": at most " + Integer.MAX_VALUE + " bytes");
        }
        return new ServerSettings(server.host(), server.port(), server.token(), Path.of(server.tokenFile()),
                (int) server.maxBodyBytes(), Path.of(server.dataRoot()), Duration.ofMillis(server.eventBatchMs()),
                Duration.ofSeconds(30), 32, PipelineSettings.DEFAULT, ServerLimits.from(server));
    }

    public ServerSettings withBind(String newBind) {
        return new ServerSettings(newBind, port, token, tokenFile, maxBodyBytes, dataRoot, eventBatch, askTimeout,
                retainFinished, pipeline, limits);
    }

    public ServerSettings withPort(int newPort) {
        return new ServerSettings(bind, newPort, token, tokenFile, maxBodyBytes, dataRoot, eventBatch, askTimeout,
                retainFinished, pipeline, limits);
    }

    public ServerSettings withToken(String newToken, Path newTokenFile) {
        return new ServerSettings(bind, port, newToken, newTokenFile, maxBodyBytes, dataRoot, eventBatch, askTimeout,
                retainFinished, pipeline, limits);
    }

    public ServerSettings withLimits(ServerLimits newLimits) {
        return new ServerSettings(bind, port, token, tokenFile, maxBodyBytes, dataRoot, eventBatch, askTimeout,
                retainFinished, pipeline, newLimits);
    }
}
