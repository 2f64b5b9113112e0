package io.kdapack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class SseBenchCommandTest {

    private static String run(String... args) {
        PrintStream stdout = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            assertEquals(0, Main.commandLine().execute(args));
        } finally {
            System.setOut(stdout);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    /**
     * A tiny run, batched and not, prints one JSON object whose parts add up; the command itself fails unless every
     * subscriber received every event (no timing is asserted).
     */
    @Test
    void everySubscriberGetsEveryEventBatchedOrNot() throws Exception {
        for (String batch : new String[] {"0", "20"}) {
            JsonNode json = new ObjectMapper().readTree(run("bench", "sse", "--subscribers", "5", "--events", "6",
                    "--interval-ms", "2", "--rounds", "1", "--event-batch-ms", batch));
            assertEquals(5, json.get("subscribers").asInt());
            assertEquals(Long.parseLong(batch), json.get("event_batch_ms").asLong());
            double server = json.get("server_cpu_us_per_subscriber_event").asDouble();
            double subscribers = json.get("subscriber_cpu_us_per_subscriber_event").asDouble();
            assertTrue(server >= 0 && subscribers >= 0, json.toString());
            assertEquals(server + subscribers, json.get("total_cpu_us_per_subscriber_event").asDouble(), 1e-9);
        }
    }

    @Test
    void aNegativeBatchIntervalIsRefusedByName() {
        PrintStream stderr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        int code;
        try {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            code = Main.commandLine().execute("bench", "sse", "--event-batch-ms", "-1");
        } finally {
            System.setErr(stderr);
        }
        assertEquals(2, code);
        assertTrue(captured.toString(StandardCharsets.UTF_8).contains("--event-batch-ms must be in [0, 3600000], got -1"),
                captured.toString(StandardCharsets.UTF_8));
    }
}
