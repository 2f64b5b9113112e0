package io.kdapack.api.server;

import io.kdapack.actors.pipeline.PipelineSettings;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How {@code kdapack serve} listens and guards itself.
 *
 * @param bind           address to listen on; loopback by default
 * @param port           TCP port; 0 picks a free one
 * @param token          bearer token required on every call but {@code /healthz}; null = generate one at
 *                       start and write it to {@code tokenFile}
 * @param tokenFile      where a generated token is written (owner read/write only)
 * @param maxBodyBytes   largest request body; larger ones get 413
 * @param dataRoot       directory that dataset paths in job configurations must stay inside
 * @param askTimeout     longest an HTTP call waits on the job actors before answering 503
 * @param retainFinished finished jobs whose status and event history are kept
 * @param pipeline       actor pipeline settings of every job
 */
public record ServerSettings(String bind, int port, String token, Path tokenFile, int maxBodyBytes, Path dataRoot,
                             Duration askTimeout, int retainFinished, PipelineSettings pipeline) {

    public static final String DEFAULT_BIND = "127.0.0.1";
    public static final int DEFAULT_PORT = 8470;
    public static final int DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

    public ServerSettings {
        if (bind == null || bind.isBlank()) {
            throw new IllegalArgumentException("bind address must not be empty");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], got " + port);
        }
        if (token != null && token.length() < 16) {
            throw new IllegalArgumentException("a configured token must have at least 16 characters, got "
                    + token.length());
        }
        if (maxBodyBytes < 1024) {
            throw new IllegalArgumentException("maxBodyBytes must be >= 1024, got " + maxBodyBytes);
        }
        if (askTimeout.isNegative() || askTimeout.isZero()) {
            throw new IllegalArgumentException("askTimeout must be positive, got " + askTimeout);
        }
        if (retainFinished < 0) {
            throw new IllegalArgumentException("retainFinished must be >= 0, got " + retainFinished);
        }
    }

    /** Defaults: loopback, port 8470, generated token in {@code runs/server.token}, data root {@code .}. */
    public static ServerSettings defaults() {
        return new ServerSettings(DEFAULT_BIND, DEFAULT_PORT, null, Path.of("runs", "server.token"),
                DEFAULT_MAX_BODY_BYTES, Path.of("."), Duration.ofSeconds(30), 32, PipelineSettings.DEFAULT);
    }

    public ServerSettings withBind(String newBind) {
        return new ServerSettings(newBind, port, token, tokenFile, maxBodyBytes, dataRoot, askTimeout, retainFinished,
                pipeline);
    }

    public ServerSettings withPort(int newPort) {
        return new ServerSettings(bind, newPort, token, tokenFile, maxBodyBytes, dataRoot, askTimeout, retainFinished,
                pipeline);
    }

    public ServerSettings withToken(String newToken, Path newTokenFile) {
        return new ServerSettings(bind, port, newToken, newTokenFile, maxBodyBytes, dataRoot, askTimeout,
                retainFinished, pipeline);
    }

    public ServerSettings withMaxBodyBytes(int newMaxBodyBytes) {
        return new ServerSettings(bind, port, token, tokenFile, newMaxBodyBytes, dataRoot, askTimeout, retainFinished,
                pipeline);
    }
}
