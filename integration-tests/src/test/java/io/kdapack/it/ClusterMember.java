package io.kdapack.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One {@code kdapack serve} cluster member in a JVM of its own (this test JVM's class path), on 127.0.0.1 with its own
 * Artery port, so that it can be killed with SIGKILL. Every member of a test shares the jobs directory (beside the
 * token file) and the data root, as members on several machines would share a file system.
 */
final class ClusterMember implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)");
    private static final Pattern UP = Pattern.compile("cluster member (pekko://\\S+) up");

    /**
     * Longest a member may take to start: a JVM of the whole class path plus Pekko's start takes 2–3 s alone, but a
     * minute on a 2-core machine that other builds share.
     */
    static final java.time.Duration START_WAIT = java.time.Duration.ofSeconds(150);

    private final Process process;
    private final int artery;
    private final StringBuffer output = new StringBuffer();
    private final CompletableFuture<String> up = new CompletableFuture<>();
    private final CompletableFuture<Integer> listening = new CompletableFuture<>();

    /**
     * Starts a member; {@code clusterYaml} is the body of its {@code cluster:} section (indented two spaces), to which
     * {@code enabled}, {@code host} and {@code port} are added.
     */
    ClusterMember(Path dir, Path dataRoot, String name, int arteryPort, String clusterYaml) throws IOException {
        this.artery = arteryPort;
        Path config = dir.resolve(name + ".yaml");
        Files.writeString(config, "server:\n  host: 127.0.0.1\n  port: 0\n  token: " + TrainingServer.TOKEN
                + "\n  token_file: " + dir.resolve("token") + "\n  data_root: " + dataRoot + "\n  event_batch_ms: 0\n"
                + "cluster:\n  enabled: true\n  host: 127.0.0.1\n  port: " + arteryPort + "\n" + clusterYaml);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        process = new ProcessBuilder(List.of(java, "--add-modules", "jdk.incubator.vector", "-Xmx512m",
                "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), "io.kdapack.cli.Main", "serve", "--config",
                config.toString())).redirectErrorStream(true).start();
        Thread.ofVirtual().start(this::drain);
    }

    /** A free TCP port of the loopback interface (free when asked; the member binds it a moment later). */
    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    int arteryPort() {
        return artery;
    }

    /** Waits (bounded) until the member is Up in the cluster; its address. */
    String awaitUp() throws Exception {
        try {
            return up.get(START_WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("member did not come up: " + output, e);
        }
    }

    /** Waits (bounded) for the HTTP port of an api member. */
    int awaitHttp() throws Exception {
        try {
            return listening.get(START_WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("api member did not listen: " + output, e);
        }
    }

    /** SIGKILL: no shutdown hook, no checkpoint, no leaving the cluster. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** SIGTERM: the member checkpoints its own jobs and leaves the cluster. */
    void terminate() {
        process.destroy();
    }

    /** Waits (bounded) for the process to exit; its exit code. */
    int awaitExit() throws InterruptedException {
        if (!process.waitFor(START_WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("kdapack serve did not exit within " + START_WAIT + ": " + output);
        }
        return process.exitValue();
    }

    String output() {
        return output.toString();
    }

    private void drain() {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null) {
                output.append(line).append('\n');
                Matcher http = LISTENING.matcher(line);
                if (http.find()) {
                    listening.complete(Integer.parseInt(http.group(1)));
                }
                Matcher member = UP.matcher(line);
                if (member.find()) {
                    up.complete(member.group(1));
                }
            }
        } catch (IOException e) {
            // the process is gone; the futures below say so
        }
        up.completeExceptionally(new IllegalStateException("kdapack serve exited: " + output));
        listening.completeExceptionally(new IllegalStateException("kdapack serve exited: " + output));
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
