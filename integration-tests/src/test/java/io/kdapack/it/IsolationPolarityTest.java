package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server job runs the production hybrid model with the document isolation its configuration asks for, in that
 * polarity: scored through {@code POST /v1/steps}, two rows that share their second document and differ in the first
 * give that second document bit-identical losses with {@code train.isolation: true} (KDA state, short convolutions
 * and attention restart at the boundary), and different ones with {@code false} (each row is one sequence). A model
 * built with the flag inverted fails both halves.
 */
class IsolationPolarityTest {
    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");
    /** Row length: one 64-token chunk of the KDA kernel per row, so both rows put the shared document at one offset. */
    private static final int T = 64;
    /** Length of the first document of each row (EOD included); the shared second document fills the row. */
    private static final int FIRST = 13;

    @TempDir
    Path temp;

    @Test
    void isolationOnKeepsTheSecondDocumentBitIdenticalAndOffLetsTheFirstLeakIntoIt() throws Exception {
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), temp.resolve("jobs"))) {
            double[] on = secondDocumentLosses(server, true);
            double[] off = secondDocumentLosses(server, false);
            assertEquals(on[0], on[1], "isolation on: the shared document does not see the one before it");
            assertNotEquals(off[0], off[1], "isolation off: the shared document sees the one before it");
        }
    }

    /**
     * Starts a long job with {@code train.isolation = isolation}, waits for its first step, scores the two-row batch on
     * its weights and cancels it; returns the losses of the shared second document in row 0 and in row 1.
     */
    private static double[] secondDocumentLosses(TrainingServer server, boolean isolation) throws Exception {
        Map<String, Object> config = TrainingServer.tinyConfig(500, "mqar/mqar-train");
        Map<String, Object> train = new LinkedHashMap<>(castMap(config.get("train")));
        train.put("isolation", isolation);
        Map<String, Object> withFlag = new LinkedHashMap<>(config);
        withFlag.put("train", train);
        String id = server.startJob(withFlag);
        assertEquals(1, server.follow(id, 1).steps().size());

        HttpResponse<String> response = server.send(server.request("/v1/steps").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(TrainingServer.JSON.writeValueAsString(batch(id)))).build());
        assertEquals(200, response.statusCode(), response.body());
        JsonNode segments = TrainingServer.JSON.readTree(response.body()).path("segments");
        assertEquals(4, segments.size(), "two documents in each of two rows: " + response.body());
        assertNotEquals(segments.get(0).path("loss").asDouble(), segments.get(2).path("loss").asDouble(),
                "the first documents differ");
        assertEquals(T - FIRST, segments.get(1).path("count").asLong());
        server.send(server.request("/v1/jobs/" + id).DELETE().build());
        return new double[] {segments.get(1).path("loss").asDouble(), segments.get(3).path("loss").asDouble()};
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Object map) {
        return (Map<String, Object>) map;
    }

    /**
     * Two rows of {@link #T} tokens: a first document of {@link #FIRST} tokens (different in each row, ending in EOD),
     * then the same second document; segment ids 1 and 2, positions restarting, every position in the loss.
     */
    private static Map<String, Object> batch(String job) {
        int eod = 129; // the demo task's EOD
        List<List<Integer>> tokens = new ArrayList<>();
        List<List<Integer>> labels = new ArrayList<>();
        List<List<Integer>> segments = new ArrayList<>();
        List<List<Integer>> positions = new ArrayList<>();
        List<List<Integer>> mask = new ArrayList<>();
        for (int row = 0; row < 2; row++) {
            int[] raw = new int[T + 1];
            for (int t = 0; t <= T; t++) {
                raw[t] = t < FIRST ? (7 + 31 * row + 5 * t) % 128 : (3 + 11 * t) % 128;
            }
            raw[FIRST - 1] = eod;
            raw[T] = eod;
            List<Integer> tok = new ArrayList<>();
            List<Integer> lab = new ArrayList<>();
            List<Integer> seg = new ArrayList<>();
            List<Integer> pos = new ArrayList<>();
            List<Integer> msk = new ArrayList<>();
            for (int t = 0; t < T; t++) {
                tok.add(raw[t]);
                lab.add(raw[t + 1]);
                seg.add(t < FIRST ? 1 : 2);
                pos.add(t < FIRST ? t : t - FIRST);
                msk.add(1);
            }
            tokens.add(tok);
            labels.add(lab);
            segments.add(seg);
            positions.add(pos);
            mask.add(msk);
        }
        Map<String, Object> request = new LinkedHashMap<>();
        request.put("job", job);
        request.put("tokens", tokens);
        request.put("labels", labels);
        request.put("loss_mask", mask);
        request.put("segment_ids", segments);
        request.put("position_ids", positions);
        return request;
    }
}
