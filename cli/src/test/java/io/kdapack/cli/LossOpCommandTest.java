package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class LossOpCommandTest {

    /** Two micro-batches of one sample with L = 2, V = 4; uniform logits so every token's loss is log 4. */
    private static SafeTensors.Builder uniformCase() {
        return SafeTensors.builder().meta("micro_batch_size", "1").meta("num_microbatches", "2")
                .put(Tensor.of("logits", new float[16], 2, 2, 4))
                .put(Tensor.of("labels", new long[] {1, 2, 3, 0}, 2, 2))
                .put(Tensor.of("loss_mask", new float[] {1, 1, 0, 0}, 2, 2));
    }

    @Test
    void writesLossTensorsUnderGoldenNames(@TempDir Path dir) throws Exception {
        Path in = dir.resolve("case.safetensors");
        Path out = dir.resolve("out.safetensors");
        uniformCase().build().write(in);
        Result r = run("op", "loss", "--in", in.toString(), "--out", out.toString());
        assertEquals(0, r.exitCode, r.err);

        SafeTensors st = SafeTensors.read(out);
        double log4 = Math.log(4);
        assertArrayEquals(new double[] {log4, log4, log4, log4}, st.get("per_token_loss").toDoubleArray(), 1e-12);
        assertArrayEquals(new long[] {2, 0}, st.get("microbatch_num_tokens").toLongArray());
        assertArrayEquals(new double[] {2 * log4, 0}, st.get("microbatch_loss_sum").toDoubleArray(), 1e-12);
        // Mean mode: (log4 + 0) / 2 with the empty micro-batch counted; per-token and logged: log 4.
        assertEquals(log4 / 2, st.get("loss_per_microbatch_mean").toDoubleArray()[0], 1e-12);
        assertEquals(log4, st.get("loss_per_token").toDoubleArray()[0], 1e-12);
        assertEquals(log4, st.get("lm_loss_logged").toDoubleArray()[0], 1e-12);
        assertEquals(log4 / 3, st.get("loss_per_microbatch_mean_with_empty_microbatch").toDoubleArray()[0], 1e-12);
        // Token 0, label 1: (softmax − onehot) / count / M = (0.25 − [v=1]) / 2 / 2.
        double[] grad = st.get("grad_logits_per_microbatch_mean").toDoubleArray();
        assertArrayEquals(new double[] {0.0625, -0.1875, 0.0625, 0.0625}, java.util.Arrays.copyOf(grad, 4), 1e-7);
        assertArrayEquals(new long[] {2, 2, 4}, st.get("grad_logits_per_token").shape());
    }

    @Test
    void badFilesEndInOneLineAndExitCode2(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("out.safetensors");
        Path garbage = dir.resolve("garbage.safetensors");
        Files.write(garbage, new byte[] {1, 2, 3});
        Path noLogits = dir.resolve("nologits.safetensors");
        SafeTensors.builder().meta("micro_batch_size", "1").put(Tensor.of("labels", new long[] {0}, 1, 1)).build().write(noLogits);
        Path badLayout = dir.resolve("layout.safetensors");
        uniformCase().meta("num_microbatches", "3").build().write(badLayout);
        Path badLabel = dir.resolve("label.safetensors");
        SafeTensors.builder().meta("micro_batch_size", "1").meta("num_microbatches", "1")
                .put(Tensor.of("logits", new float[4], 1, 1, 4))
                .put(Tensor.of("labels", new long[] {9}, 1, 1))
                .put(Tensor.of("loss_mask", new float[] {1}, 1, 1)).build().write(badLabel);

        expectBadInput("--in: no such file", dir.resolve("missing.safetensors"), out);
        expectBadInput("header length", garbage, out);
        expectBadInput("missing tensor 'logits'", noLogits, out);
        expectBadInput("micro_batch_size 1 × num_microbatches 3 != 2", badLayout, out);
        expectBadInput("label 9 at token 0", badLabel, out);
        assertFalse(Files.exists(out), "no output written on error");
    }

    private static void expectBadInput(String expected, Path in, Path out) {
        Result r = run("op", "loss", "--in", in.toString(), "--out", out.toString());
        assertEquals(Main.EXIT_BAD_INPUT, r.exitCode, r.err);
        assertTrue(r.err.contains(expected), r.err);
        assertEquals(1, r.err.strip().lines().count(), r.err);
    }

    private record Result(int exitCode, String err) {
    }

    private static Result run(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setErr(new PrintWriter(err, true));
        int code = cli.execute(args);
        return new Result(code, err.toString());
    }
}
