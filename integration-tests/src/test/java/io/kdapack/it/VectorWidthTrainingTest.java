package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A short training of the default model gives bitwise the same losses, MTP losses, gradient norms, weights and
 * evaluation whatever the vector width: {@link VectorWidthTrainingProbe} runs in JVMs limited to 4-float vectors (the
 * reference), to 8 and to 16, and with AVX2 only on a CPU that has AVX-512. A width this CPU cannot run is skipped,
 * saying so.
 */
class VectorWidthTrainingTest {
    private static final List<String> REFERENCE_FLAGS = List.of("-XX:MaxVectorSize=16");
    private static final long TIMEOUT_SECONDS = 240;
    private static Probe reference;

    /** What one probe JVM printed. */
    private record Probe(int exitCode, String output, int lanes, Map<String, String> digests) {
        boolean flagRejected() {
            return exitCode != 0 && output.contains("Unrecognized VM option");
        }
    }

    private static Probe probe(List<String> flags) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-Dkdapack.home=" + TrainingServer.repositoryRoot()));
        command.addAll(flags);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), VectorWidthTrainingProbe.class.getName()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
            try (var in = process.getInputStream()) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(output unreadable: " + e + ")";
            }
        });
        if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("training probe with " + flags + " still ran after " + TIMEOUT_SECONDS + " s; killed");
        }
        int lanes = -1;
        Map<String, String> digests = new TreeMap<>();
        for (String line : output.join().lines().toList()) {
            String[] words = line.split(" ");
            if (words.length == 2 && words[0].equals("lanes")) {
                lanes = Integer.parseInt(words[1]);
            } else if (words.length == 3 && words[0].equals("digest")) {
                digests.put(words[1], words[2]);
            }
        }
        return new Probe(process.exitValue(), output.join(), lanes, digests);
    }

    private static synchronized Probe reference() throws Exception {
        if (reference == null) {
            reference = probe(REFERENCE_FLAGS);
            assertEquals(0, reference.exitCode(), "reference training " + REFERENCE_FLAGS + " failed:\n"
                    + reference.output());
            assertEquals(4, reference.lanes(), "lanes under " + REFERENCE_FLAGS);
            // Loss, MTP loss and gradient norm of every step, the weights and the evaluation.
            assertEquals(3 * VectorWidthTrainingProbe.STEPS + 2, reference.digests().size(), reference.output());
        }
        return reference;
    }

    @ParameterizedTest(name = "{0} ({1} floats)")
    @CsvSource({"-XX:MaxVectorSize=32, 8", "-XX:MaxVectorSize=64, 16", "-XX:UseAVX=2, 8"})
    void trainingIsBitwiseThatOfFourLanes(String flag, int lanes) throws Exception {
        if (flag.startsWith("-XX:UseAVX")) {
            assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "skipped: this CPU has no AVX-512 (preferred "
                    + "vector of " + FloatVector.SPECIES_PREFERRED.length() + " floats), so " + flag + " is its own width");
        }
        Probe ref = reference();
        Probe probe = probe(List.of(flag));
        assumeTrue(!probe.flagRejected(), "skipped: this JVM does not know " + flag + " (another CPU architecture)");
        assertEquals(0, probe.exitCode(), flag + ": training failed:\n" + probe.output());
        assumeTrue(probe.lanes() == lanes, "skipped: this CPU cannot run " + lanes + "-float vectors (" + flag
                + " gives " + probe.lanes() + ")");
        assertEquals(ref.digests(), probe.digests(), flag + " (" + lanes + " floats) against 4 floats: losses, MTP "
                + "losses and gradient norms as double bits, weights and evaluation as SHA-256");
    }
}
