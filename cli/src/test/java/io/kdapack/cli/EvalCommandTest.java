package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.ConfigLoader;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.nn.Parameter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class EvalCommandTest {
    private static final double STEP = 1e-3;
    /** The tiny model of the core tests: d = 16, KDA + MLA layers, MTP on. */
    static final String CONFIG = """
            model:
              vocab_size: 20
              hidden_size: 16
              num_layers: 2
              full_attention_interval: 2
              intermediate_size: 24
              kda: {num_heads: 1, num_v_heads: 2, head_dim: 8, conv_size: 4}
              mla: {num_heads: 2, q_lora_rank: 8, kv_lora_rank: 8, qk_nope_head_dim: 4, qk_rope_head_dim: 4, v_head_dim: 4}
              mtp: {depth: 1, loss_factor: 0.1}
            train:
              data: {eod_id: 18, pad_id: 19}
            """;

    /**
     * Batch [2,8]: row 0 = documents of 3 and 5 tokens (the last token of the first one masked), row 1 = 6 tokens and
     * 2 padding. Main loss tokens 3−1+5+6 = 13, MTP tokens (rolled mask) 1+4+5 = 10.
     */
    private static SafeTensors batch() {
        long[] tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 0};
        long[] labels = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0};
        float[] mask = {1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
        int[] positions = {0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 0, 0};
        int[] segments = {1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0};
        return SafeTensors.builder().put(Tensor.of("tokens", tokens, 2, 8)).put(Tensor.of("labels", labels, 2, 8))
                .put(Tensor.of("loss_mask", mask, 2, 8)).put(Tensor.of("position_ids", positions, 2, 8))
                .put(Tensor.of("segment_ids", segments, 2, 8)).build();
    }

    @Test
    void writesLossesAndGradientsThatMatchFiniteDifferences(@TempDir Path dir) throws Exception {
        Path config = Files.writeString(dir.resolve("tiny.yaml"), CONFIG);
        HybridModel model = new HybridModel(ConfigLoader.fromYaml(CONFIG).model(), new KdaChunked(1), true);
        model.initialize(7);
        Path weights = dir.resolve("w.safetensors");
        model.weights().write(weights);
        Path batch = dir.resolve("b.safetensors");
        batch().write(batch);
        SafeTensors out = eval(config, weights, batch, dir.resolve("o.safetensors"));

        assertArrayEquals(new long[] {2, 8}, out.get("per_token_loss").shape());
        assertEquals(13, out.get("count").toLongArray()[0]);
        assertEquals(10, out.get("mtp_count").toLongArray()[0]);
        double[] perToken = out.get("per_token_loss").toDoubleArray();
        assertEquals(0.0, perToken[2]);
        assertEquals(0.0, perToken[14]);
        double sum = 0;
        for (double v : perToken) {
            sum += v;
        }
        assertEquals(sum / 13, out.get("loss").toDoubleArray()[0], 1e-12);
        // Near log V at initialisation (weights of std 0.02).
        assertEquals(Math.log(20), out.get("loss").toDoubleArray()[0], 0.1);
        for (Parameter p : model.parameters()) {
            Tensor grad = out.get("grad." + p.name());
            assertArrayEquals(java.util.Arrays.stream(p.shape()).asLongStream().toArray(), grad.shape(), p.name());
        }

        // The gradient is that of loss + 0.1·mtp_loss: along its own unit direction the derivative is ‖g‖. Check it for
        // the embedding (its gradient crosses every layer, both heads and MTP) by running eval again on perturbed
        // weight files, step 1e-3: the objective is ~3, its float32 round-off ~1e-6 over 2e-3 is ~5e-4 against
        // ‖g‖ ~ 1.6; observed error 1.7e-3 (the steep RMSNorm of the small embedding rows); tolerance 1e-2.
        for (String name : new String[] {"model.embed_tokens.weight"}) {
            float[] g = out.get("grad." + name).toFloatArray();
            double norm = 0;
            for (float v : g) {
                norm += (double) v * v;
            }
            norm = Math.sqrt(norm);
            double plus = objective(perturbed(dir, config, model, name, g, STEP / norm), batch, dir);
            double minus = objective(perturbed(dir, config, model, name, g, -STEP / norm), batch, dir);
            double numeric = (plus - minus) / (2 * STEP);
            assertEquals(norm, numeric, 1e-2 * norm, name);
        }
    }

    private static Path perturbed(Path dir, Path config, HybridModel model, String name, float[] direction,
                                  double scale) throws Exception {
        SafeTensors.Builder b = SafeTensors.builder();
        for (Parameter p : model.parameters()) {
            float[] v = p.values().clone();
            if (p.name().equals(name)) {
                for (int i = 0; i < v.length; i++) {
                    v[i] += (float) (scale * direction[i]);
                }
            }
            b.put(Tensor.of(p.name(), v, java.util.Arrays.stream(p.shape()).asLongStream().toArray()));
        }
        Path file = dir.resolve("perturbed.safetensors");
        b.build().write(file);
        return file;
    }

    private static double objective(Path weights, Path batch, Path dir) throws Exception {
        SafeTensors out = eval(dir.resolve("tiny.yaml"), weights, batch, dir.resolve("fd.safetensors"));
        return out.get("loss").toDoubleArray()[0] + 0.1 * out.get("mtp_loss").toDoubleArray()[0];
    }

    private static SafeTensors eval(Path config, Path weights, Path batch, Path out) throws Exception {
        Result r = run("eval", "--config", config.toString(), "--weights", weights.toString(), "--batch",
                batch.toString(), "--out", out.toString(), "--threads", "1");
        assertEquals(0, r.exitCode, r.err);
        return SafeTensors.read(out);
    }

    /**
     * eval reads no dataset, so a vocabulary below the default {@code train.data.eod_id} (129) is no error: the
     * configuration without the train section that the other tests add to satisfy kdapack train.
     */
    @Test
    void acceptsAModelWhoseVocabularyIsBelowTheDefaultEodId(@TempDir Path dir) throws Exception {
        String modelOnly = CONFIG.substring(0, CONFIG.indexOf("train:"));
        Path config = Files.writeString(dir.resolve("tiny.yaml"), modelOnly);
        HybridModel model = new HybridModel(ConfigLoader.fromYaml(CONFIG).model(), new KdaChunked(1), true);
        model.initialize(7);
        Path weights = dir.resolve("w.safetensors");
        model.weights().write(weights);
        Path batch = dir.resolve("b.safetensors");
        batch().write(batch);
        SafeTensors out = eval(config, weights, batch, dir.resolve("o.safetensors"));
        assertEquals(13, out.get("count").toLongArray()[0]);
    }

    @Test
    void badInputEndsInOneLineAndExitCode2(@TempDir Path dir) throws Exception {
        Path config = Files.writeString(dir.resolve("tiny.yaml"), CONFIG);
        HybridModel model = new HybridModel(ConfigLoader.fromYaml(CONFIG).model(), new KdaChunked(1), true);
        Path weights = dir.resolve("w.safetensors");
        model.weights().write(weights);
        Path batch = dir.resolve("b.safetensors");
        batch().write(batch);
        Path noSegments = dir.resolve("noseg.safetensors");
        SafeTensors.Builder partial = SafeTensors.builder();
        batch().tensors().values().stream().filter(t -> !t.name().equals("segment_ids")).forEach(partial::put);
        partial.build().write(noSegments);
        Path otherConfig = Files.writeString(dir.resolve("other.yaml"), CONFIG.replace("hidden_size: 16",
                "hidden_size: 32"));
        Path out = dir.resolve("o.safetensors");

        expectBadInput("--weights: no such file", config, dir.resolve("missing.safetensors"), batch, out);
        expectBadInput("missing tensor 'segment_ids'", config, weights, noSegments, out);
        expectBadInput("wrong shape", otherConfig, weights, batch, out);
        assertFalse(Files.exists(out), "no output written on error");
    }

    private static void expectBadInput(String expected, Path config, Path weights, Path batch, Path out) {
        Result r = run("eval", "--config", config.toString(), "--weights", weights.toString(), "--batch",
                batch.toString(), "--out", out.toString());
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
