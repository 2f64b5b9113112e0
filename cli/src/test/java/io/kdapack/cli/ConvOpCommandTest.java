package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.testkit.Golden;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ConvOpCommandTest {

    private Path golden() throws Exception {
        return Golden.path("conv/c04_initial_state.safetensors");
    }

    /** Golden README tolerances for float32 implementations: outputs ≤ 1e-5, gradients ≤ 1e-4. */
    @Test
    void writesOutputsAndGradientsUnderGoldenNames(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("out.safetensors");
        Run run = run("op", "conv", "--in", golden().toString(), "--out", out.toString());
        assertEquals(0, run.exitCode, run.err);
        SafeTensors expected = SafeTensors.read(golden());
        SafeTensors actual = SafeTensors.read(out);
        for (String name : List.of("y", "final_state", "dx", "dweight", "dbias", "dinitial_state")) {
            Tensor t = actual.get(name);
            assertEquals(DType.F64, t.dtype(), name);
            assertArrayEquals(expected.get(name).shape(), t.shape(), name);
            double tolerance = name.startsWith("d") ? 1e-4 : 1e-5;
            double err = relativeError(t.toDoubleArray(), expected.get(name).toDoubleArray());
            assertTrue(err <= tolerance, name + ": relative error " + err);
        }
    }

    @Test
    void writesFloat32OnRequest(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("out.safetensors");
        Run run = run("op", "conv", "--in", golden().toString(), "--out", out.toString(), "--dtype", "f32");
        assertEquals(0, run.exitCode, run.err);
        assertEquals(DType.F32, SafeTensors.read(out).get("y").dtype());
    }

    @Test
    void missingTensorIsOneLineErrorWithExitCode2(@TempDir Path dir) throws Exception {
        SafeTensors full = SafeTensors.read(golden());
        SafeTensors.Builder b = SafeTensors.builder().metadata(full.metadata());
        full.tensors().values().stream().filter(t -> !t.name().equals("dy")).forEach(b::put);
        Path broken = dir.resolve("no_dy.safetensors");
        b.build().write(broken);
        Path out = dir.resolve("out.safetensors");
        Run run = run("op", "conv", "--in", broken.toString(), "--out", out.toString());
        assertEquals(Main.EXIT_BAD_INPUT, run.exitCode);
        assertEquals(1, run.err.strip().lines().count(), run.err);
        assertTrue(run.err.contains("missing tensor 'dy'"), run.err);
        assertFalse(Files.exists(out));
    }

    @Test
    void malformedTensorIsOneLineErrorWithExitCode2(@TempDir Path dir) throws Exception {
        SafeTensors full = SafeTensors.read(golden());
        SafeTensors.Builder b = SafeTensors.builder().metadata(full.metadata());
        full.tensors().values().stream().filter(t -> !t.name().equals("weight")).forEach(b::put);
        b.put(Tensor.of("weight", new float[24 * 3], 24, 3, 1));
        Path broken = dir.resolve("bad_weight.safetensors");
        b.build().write(broken);
        Run run = run("op", "conv", "--in", broken.toString(), "--out", dir.resolve("o.safetensors").toString());
        assertEquals(Main.EXIT_BAD_INPUT, run.exitCode);
        assertEquals(1, run.err.strip().lines().count(), run.err);
        assertTrue(run.err.contains("tensor 'weight' must have shape [D,W]"), run.err);

        SafeTensors.Builder badState = SafeTensors.builder().metadata(full.metadata());
        full.tensors().values().stream().filter(t -> !t.name().equals("initial_state")).forEach(badState::put);
        badState.put(Tensor.of("initial_state", new float[5 * 24 * 4], 5, 4, 24));
        Path transposed = dir.resolve("bad_state.safetensors");
        badState.build().write(transposed);
        Run state = run("op", "conv", "--in", transposed.toString(), "--out", dir.resolve("q.safetensors").toString());
        assertEquals(Main.EXIT_BAD_INPUT, state.exitCode);
        assertEquals("kdapack conv: tensor 'initial_state' must have shape [5, 24, 4], got [5, 4, 24]",
                state.err.strip());

        Path garbage = dir.resolve("garbage.safetensors");
        Files.write(garbage, new byte[] {1, 2, 3});
        Run unreadable = run("op", "conv", "--in", garbage.toString(), "--out", dir.resolve("p.safetensors").toString());
        assertEquals(Main.EXIT_BAD_INPUT, unreadable.exitCode);
        assertEquals(1, unreadable.err.strip().lines().count(), unreadable.err);
    }

    private record Run(int exitCode, String err) {
    }

    private static Run run(String... args) {
        CommandLine cli = Main.commandLine();
        StringWriter err = new StringWriter();
        cli.setErr(new PrintWriter(err, true));
        int code = cli.execute(args);
        return new Run(code, err.toString());
    }

    private static double relativeError(double[] actual, double[] expected) {
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < actual.length; i++) {
            diff += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            ref += expected[i] * expected[i];
        }
        return Math.sqrt(diff / ref);
    }
}
