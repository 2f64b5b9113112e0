package io.kdapack.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every CPU kernel gives bitwise the same results whatever the vector width: {@link VectorWidthProbe} runs in JVMs
 * limited to 4-float vectors (the reference, which every x86-64 and ARM CPU runs), to 8 and to 16, and with AVX2
 * only on a CPU that has AVX-512; every digest must equal the reference's. A width this CPU cannot run is skipped,
 * saying so.
 */
class VectorWidthForkTest {
    private static final List<String> REFERENCE_FLAGS = List.of("-XX:MaxVectorSize=16");
    private static final Duration TIMEOUT = Duration.ofMinutes(3);
    private static Probe reference;

    /** The lanes, digests and output of one probe JVM. */
    private record Probe(int lanes, Map<String, String> digests, ForkedJvm.Run run) {
        static Probe of(ForkedJvm.Run run) {
            int lanes = -1;
            Map<String, String> digests = new TreeMap<>();
            for (String line : run.lines()) {
                String[] words = line.split(" ");
                if (words.length == 2 && words[0].equals("lanes")) {
                    lanes = Integer.parseInt(words[1]);
                } else if (words.length == 3 && words[0].equals("digest")) {
                    digests.put(words[1], words[2]);
                }
            }
            return new Probe(lanes, digests, run);
        }
    }

    private static Probe probe(List<String> flags) throws Exception {
        return Probe.of(ForkedJvm.run(flags, VectorWidthProbe.class.getName(), TIMEOUT));
    }

    private static synchronized Probe reference() throws Exception {
        if (reference == null) {
            reference = probe(REFERENCE_FLAGS);
            assertEquals(0, reference.run().exitCode(), "reference probe " + REFERENCE_FLAGS + " failed:\n"
                    + reference.run().output());
            assertEquals(4, reference.lanes(), "lanes under " + REFERENCE_FLAGS);
        }
        return reference;
    }

    @ParameterizedTest(name = "{0} ({1} floats)")
    @CsvSource({"-XX:MaxVectorSize=32, 8", "-XX:MaxVectorSize=64, 16", "-XX:UseAVX=2, 8"})
    void everyResultIsBitwiseThatOfFourLanes(String flag, int lanes) throws Exception {
        if (flag.startsWith("-XX:UseAVX")) {
            assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "skipped: this CPU has no AVX-512 (preferred "
                    + "vector of " + FloatVector.SPECIES_PREFERRED.length() + " floats), so " + flag + " is its own width");
        }
        Probe ref = reference();
        Probe probe = probe(List.of(flag));
        assumeTrue(!probe.run().flagRejected(), "skipped: this JVM does not know " + flag + " (another CPU "
                + "architecture)");
        assertEquals(0, probe.run().exitCode(), flag + ": probe failed:\n" + probe.run().output());
        assumeTrue(probe.lanes() == lanes, "skipped: this CPU cannot run " + lanes + "-float vectors (" + flag
                + " gives " + probe.lanes() + ")");
        assertEquals(ref.digests().keySet(), probe.digests().keySet(), flag + ": the probe's results");
        assertTrue(ref.digests().size() > 100, "the probe reports every result, got " + ref.digests().size());
        String differing = ref.digests().keySet().stream()
                .filter(name -> !ref.digests().get(name).equals(probe.digests().get(name)))
                .collect(Collectors.joining(", "));
        assertEquals("", differing, flag + " (" + lanes + " floats): results that differ from those of 4 floats");
    }
}
