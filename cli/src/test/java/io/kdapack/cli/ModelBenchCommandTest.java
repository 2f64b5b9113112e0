package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelBenchCommandTest {

    /** A tiny run of the benchmark prints one JSON object with consistent figures (no timing is asserted). */
    @Test
    void printsOneJsonObject(@TempDir Path dir) throws Exception {
        Path config = Files.writeString(dir.resolve("tiny.yaml"), EvalCommandTest.CONFIG);
        PrintStream stdout = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            code = Main.commandLine().execute("bench", "model", "--config", config.toString(), "--rows", "2", "--length", "24", "--mean-doc", "6",
                    "--threads", "2", "--warmup", "0", "--repeats", "1", "--no-blas");
        } finally {
            System.setOut(stdout);
        }
        assertEquals(0, code);
        JsonNode json = new ObjectMapper().readTree(captured.toString(StandardCharsets.UTF_8));
        assertEquals(48, json.get("tokens_per_step").asInt());
        assertTrue(json.get("parameters").asLong() > 5_000, json.toString());
        assertTrue(json.get("documents").asInt() >= 4, json.toString());
        double tokensPerSecond = json.get("tokens_per_s").asDouble();
        assertEquals(48 / (json.get("forward_backward_ms").asDouble() / 1e3), tokensPerSecond, 1e-6 * tokensPerSecond);
        double modelGflops = json.get("model_gflops").asDouble();
        assertEquals(json.get("flops_per_step").asDouble() / (json.get("forward_backward_ms").asDouble() / 1e3) * 1e-9,
                modelGflops, 1e-6 * modelGflops);
        assertEquals(modelGflops / json.get("matmul_gflops").asDouble(), json.get("mfu").asDouble(), 1e-9);
        assertTrue(json.get("blas") == null, "--no-blas runs no BLAS: " + json);
    }
}
