package io.kdapack.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class GenerateBenchCommandTest {

    /** A tiny run prints one JSON object with consistent figures (no timing is asserted). */
    @Test
    void printsOneJsonObject() throws Exception {
        PrintStream stdout = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            code = Main.commandLine().execute("bench", "generate", "--no-larger", "--prompts", "6", "--mean-prompt",
                    "20", "--steps", "3", "--decode-batches", "1,3", "--threads", "2", "--warmup", "0", "--repeats", "1", "--clients", "2",
                    "--rounds", "1");
        } finally {
            System.setOut(stdout);
        }
        assertEquals(0, code);
        JsonNode json = new ObjectMapper().readTree(captured.toString(StandardCharsets.UTF_8));
        JsonNode model = json.get("default_model");
        assertEquals(6, model.get("prompts").asInt());
        double packed = model.get("prefill_packed_tokens_per_s").asDouble();
        double alone = model.get("prefill_alone_tokens_per_s").asDouble();
        assertEquals(packed / alone, model.get("prefill_packed_speedup").asDouble(), 1e-9 * packed / alone);
        for (String batch : new String[] {"batch_1", "batch_3"}) {
            JsonNode d = model.get("decode").get(batch);
            assertTrue(d.get("tokens_per_s").asDouble() > 0, d.toString());
            assertTrue(d.get("step_latency_p99_ms").asDouble() >= d.get("step_latency_p50_ms").asDouble(), d.toString());
        }
        // Default model: 3 KDA layers of 4·(2·32·32 + (2·64 + 64)·3) bytes, 1 MLA layer of 4·(32 + 8) bytes a token.
        long kda = 3L * 4 * (2 * 32 * 32 + 192 * 3);
        assertEquals(kda, model.get("state_bytes_kda_per_sequence").asLong());
        assertEquals(kda + 160L * 1024, model.get("state_bytes_at_1k_tokens").asLong());
        assertEquals(kda + 160L * 8192, model.get("state_bytes_at_8k_tokens").asLong());
        assertTrue(model.get("read_bandwidth_gb_per_s").asDouble() > 0);
        JsonNode server = json.get("server");
        assertEquals(2, server.get("requests").asInt());
        assertTrue(server.get("ttft_p99_ms").asDouble() >= server.get("ttft_p50_ms").asDouble(), server.toString());
    }
}
