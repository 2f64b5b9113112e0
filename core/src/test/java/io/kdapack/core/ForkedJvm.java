package io.kdapack.core;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A main class run in a JVM of its own, started from this JVM's {@code java} and class path with extra JVM flags (for
 * the vector width, which is fixed at JVM start).
 */
final class ForkedJvm {

    /** How a run ended: its exit code and its output (stdout and stderr together). */
    record Run(int exitCode, String output) {
        List<String> lines() {
            return output.lines().toList();
        }

        /** Whether the JVM refused one of the flags (a flag of another CPU architecture). */
        boolean flagRejected() {
            return exitCode != 0 && output.contains("Unrecognized VM option");
        }
    }

    private ForkedJvm() {
    }

    /** Runs {@code mainClass} with {@code jvmFlags}; a JVM still running after {@code timeout} is killed (an error). */
    static Run run(List<String> jvmFlags, String mainClass, Duration timeout) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--add-modules");
        command.add("jdk.incubator.vector");
        command.addAll(jvmFlags);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass);
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> readAll(process.getInputStream()));
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError(mainClass + " with " + jvmFlags + " still ran after " + timeout + "; killed");
        }
        return new Run(process.exitValue(), output.join());
    }

    private static String readAll(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(output unreadable: " + e + ")";
        }
    }
}
