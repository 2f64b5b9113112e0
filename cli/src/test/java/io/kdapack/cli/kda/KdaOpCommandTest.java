package io.kdapack.cli.kda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.cli.Main;
import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.gpu.CudaDevice;
import io.kdapack.testkit.Golden;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * {@code kdapack op kda} on golden files of both layouts: every result tensor the file holds is written
 * under its name and shape and matches (outputs 1e-5, gradients 1e-4 relative, as the golden README asks).
 */
class KdaOpCommandTest {

    @TempDir
    Path tmp;

    @ParameterizedTest
    @CsvSource({"03_chunk_edges_gva, cpu, f64", "10_batched_segment_ids, reference, f32", "03_chunk_edges_gva, auto, f32"})
    void writesGoldenResults(String name, String backend, String dtype) throws Exception {
        Path in = Golden.path("kda/" + name + ".safetensors");
        Path out = tmp.resolve(name + ".out.safetensors");
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setErr(new PrintWriter(err));
        int code = cli.execute("op", "kda", "--in", in.toString(), "--out", out.toString(), "--backend", backend,
                "--dtype", dtype, "--threads", "2");
        assertEquals(0, code, err.toString());
        SafeTensors golden = SafeTensors.read(in);
        SafeTensors result = SafeTensors.read(out);
        for (String tensor : new String[] {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0", "dA_log", "ddt_bias"}) {
            assertEquals(golden.has(tensor), result.has(tensor), tensor + " presence");
            if (!golden.has(tensor)) {
                continue;
            }
            Tensor expected = golden.get(tensor);
            Tensor actual = result.get(tensor);
            assertEquals(dtype.equals("f32") ? DType.F32 : DType.F64, actual.dtype(), tensor + " dtype");
            assertTrue(Arrays.equals(expected.shape(), actual.shape()), tensor + " shape " + Arrays.toString(actual.shape()));
            double tolerance = tensor.equals("o") || tensor.equals("ht") ? 1e-5 : 1e-4;
            double err2 = relativeError(actual.toDoubleArray(), expected.toDoubleArray());
            assertTrue(err2 <= tolerance, tensor + ": relative error " + err2);
        }
    }

    @Test
    void cudaWithoutADriverFailsNamingTheReason() throws Exception {
        String reason = CudaDevice.unavailableReason();
        Assumptions.assumeTrue(reason != null, "a CUDA driver is present");
        Path in = Golden.path("kda/03_chunk_edges_gva.safetensors");
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setErr(new PrintWriter(err));
        int code = cli.execute("op", "kda", "--in", in.toString(), "--out", tmp.resolve("x.safetensors").toString(),
                "--backend", "cuda");
        assertEquals(1, code, err.toString());
        assertTrue(err.toString().contains("backend cuda requested but no CUDA driver"), err.toString());
        assertEquals(1, err.toString().strip().lines().count(), "one line: " + err);
    }

    @Test
    void missingTensorIsAOneLineErrorWithExitCode2() throws Exception {
        Path in = Golden.path("kda/03_chunk_edges_gva.safetensors");
        SafeTensors golden = SafeTensors.read(in);
        Map<String, Tensor> tensors = new LinkedHashMap<>(golden.tensors());
        tensors.remove("beta");
        Path broken = tmp.resolve("broken.safetensors");
        new SafeTensors(golden.metadata(), tensors).write(broken);
        String err = runExpectingFailure(broken);
        assertTrue(err.contains("missing tensor 'beta'"), err);
    }

    @Test
    void malformedTensorIsAOneLineErrorWithExitCode2() throws Exception {
        Path in = Golden.path("kda/03_chunk_edges_gva.safetensors");
        SafeTensors golden = SafeTensors.read(in);
        Map<String, Tensor> tensors = new LinkedHashMap<>(golden.tensors());
        tensors.put("beta", Tensor.of("beta", new float[7], 7));
        Path broken = tmp.resolve("broken.safetensors");
        new SafeTensors(golden.metadata(), tensors).write(broken);
        String err = runExpectingFailure(broken);
        assertTrue(err.contains("beta has 7 values"), err);
    }

    @Test
    void missingFileIsAOneLineErrorWithExitCode2() {
        String err = runExpectingFailure(tmp.resolve("absent.safetensors"));
        assertTrue(err.contains("absent.safetensors: no such file"), err);
    }

    @Test
    void unreadableFileIsAOneLineErrorWithExitCode2() throws Exception {
        Path garbage = tmp.resolve("garbage.safetensors");
        Files.write(garbage, new byte[] {1, 2, 3});
        runExpectingFailure(garbage);
    }

    private String runExpectingFailure(Path in) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setErr(new PrintWriter(err));
        Path out = tmp.resolve("never.safetensors");
        int code = cli.execute("op", "kda", "--in", in.toString(), "--out", out.toString());
        assertEquals(Main.EXIT_BAD_INPUT, code, err.toString());
        assertEquals(1, err.toString().strip().lines().count(), "one line: " + err);
        assertFalse(Files.exists(out), "no output written");
        return err.toString();
    }

    private static double relativeError(double[] actual, double[] expected) {
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < actual.length; i++) {
            diff += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            ref += expected[i] * expected[i];
        }
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }
}
