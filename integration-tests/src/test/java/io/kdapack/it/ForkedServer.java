package io.kdapack.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code kdapack serve} in a separate JVM (this test JVM's class path), so that it can be killed with SIGKILL. */
final class ForkedServer implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)");

    private final Process process;
    private final int port;

    /**
     * Starts {@code kdapack serve} on a free loopback port with jobs beside {@code tokenFile} ({@code dir/jobs}). Its
     * event streams send each step at once ({@code event_batch_ms: 0}), so that a test can stop it right after a step.
     */
    ForkedServer(Path dir, Path dataRoot) throws Exception {
        Path config = dir.resolve("server.yaml");
        Files.writeString(config, "server:\n  host: 127.0.0.1\n  port: 0\n  token: " + TrainingServer.TOKEN
                + "\n  token_file: " + dir.resolve("token") + "\n  data_root: " + dataRoot + "\n  event_batch_ms: 0\n");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        process = new ProcessBuilder(List.of(java, "--add-modules", "jdk.incubator.vector", "-cp",
                System.getProperty("java.class.path"), "io.kdapack.cli.Main", "serve", "--config", config.toString()))
                .redirectErrorStream(true).start();
        CompletableFuture<Integer> listening = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> drain(listening));
        port = listening.get(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    int port() {
        return port;
    }

    /** SIGKILL: no shutdown hook, no checkpoint, whatever was being written stays half-written. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** SIGTERM: the server's shutdown hook checkpoints its jobs and ends its event streams. */
    void terminate() {
        process.destroy();
    }

    /** Waits (bounded) for the process to exit; its exit code. */
    int awaitExit() throws InterruptedException {
        if (!process.waitFor(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("kdapack serve did not exit within " + TrainingServer.WAIT);
        }
        return process.exitValue();
    }

    /** Reads the server's output (so it never blocks on a full pipe) and reports the port it listens on. */
    private void drain(CompletableFuture<Integer> listening) {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null) {
                Matcher m = LISTENING.matcher(line);
                if (m.find()) {
                    listening.complete(Integer.parseInt(m.group(1)));
                }
            }
            listening.completeExceptionally(new IllegalStateException("kdapack serve exited without listening"));
        } catch (IOException e) {
            listening.completeExceptionally(e);
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
