package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.config.ConfigLoader;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Jobs run through the HTTP server with the real training loop on the shipped dataset: losses bit-identical to the
 * direct loop, a failing stage fails only its own job, a stopped job resumes bit-identically after a restart.
 */
class ServerTrainingTest {
    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");

    /** The shared job of three tests: 6 steps, checkpoints every 2. */
    private static final int STEPS = 6;
    private static final Map<String, Object> CONFIG = TrainingServer.tinyConfig(STEPS, "mqar/mqar-train");
    private static List<StepResult> direct;

    @TempDir
    Path temp;

    /** The direct loop's steps of {@link #CONFIG}, computed once for the class. */
    private static synchronized List<StepResult> direct() throws Exception {
        if (direct == null) {
            Path checkpoints = Files.createTempDirectory("kdapack-it-direct");
            direct = TrainingServer.trainDirectly(CONFIG, MQAR.resolve("mqar-train"), checkpoints);
            try (var files = Files.walk(checkpoints)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        return direct;
    }

    @Test
    void jobOverHttpGivesTheDirectLoopsLossesBitForBit() throws Exception {
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), temp.resolve("jobs"))) {
            String id = server.startJob(CONFIG);
            TrainingServer.Events events = server.follow(id, Integer.MAX_VALUE);
            assertEquals("succeeded", events.end());
            assertSameSteps(direct(), 0, events.steps());
            JsonNode status = server.status(id);
            assertEquals("succeeded", status.path("state").asText(), status.toString());
            assertEquals(STEPS, status.path("step").asLong());
        }
        assertTrue(Files.isDirectory(temp.resolve("jobs")), "the job directory holds the job's record");
    }

    @Test
    void aPackedBatchIsScoredOnARunningJobsWeights() throws Exception {
        Map<String, Object> config = TrainingServer.tinyConfig(500, "mqar/mqar-train");
        MicroBatch batch;
        try (Trainer direct = Trainer.create(ConfigLoader.fromDocument(config), HybridModels.FACTORY,
                MQAR.resolve("mqar-train"), temp.resolve("direct"))) {
            batch = direct.microBatches(1).get(0);
        }
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), temp.resolve("jobs"))) {
            String id = server.startJob(config);
            assertEquals(1, server.follow(id, 1).steps().size());
            Map<String, Object> request = new LinkedHashMap<>();
            request.put("job", id);
            request.put("tokens", rows(batch, i -> batch.tokens()[i]));
            request.put("labels", rows(batch, i -> batch.labels()[i]));
            request.put("loss_mask", rows(batch, i -> batch.lossMask()[i]));
            request.put("segment_ids", rows(batch, i -> batch.segmentIds()[i]));
            request.put("position_ids", rows(batch, i -> batch.positionIds()[i]));
            var response = server.send(server.request("/v1/steps").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(TrainingServer.JSON.writeValueAsString(request))).build());
            assertEquals(200, response.statusCode(), response.body());
            JsonNode loss = TrainingServer.JSON.readTree(response.body());
            assertEquals(batch.lossTokens(), loss.path("count").asLong());
            double total = loss.path("loss").asDouble();
            assertTrue(Double.isFinite(total) && total > 0, "a positive cross-entropy: " + total);
            JsonNode segments = loss.path("segments");
            assertEquals(batch.segmentCount(), segments.size(), "one loss per segment");
            long count = 0;
            double sum = 0;
            for (JsonNode segment : segments) {
                count += segment.path("count").asLong();
                sum += segment.path("loss").asDouble() * segment.path("count").asLong();
            }
            assertEquals(batch.lossTokens(), count, "the segments' counts add up to the batch's");
            // Same token losses summed per segment instead of at once: only rounding differs (~1e-15 relative).
            assertEquals(total * batch.lossTokens(), sum, 1e-9 * Math.abs(sum), "the segments' sums add up");
            int cancelled = server.send(server.request("/v1/jobs/" + id).DELETE().build()).statusCode();
            assertTrue(cancelled / 100 == 2, "cancelled: " + cancelled);
        }
    }

    /** A {@code [B·T]} array as JSON rows {@code [B][T]}. */
    private static List<List<Number>> rows(MicroBatch batch, IntFunction<Number> value) {
        List<List<Number>> rows = new ArrayList<>();
        for (int b = 0; b < batch.rows(); b++) {
            List<Number> row = new ArrayList<>();
            for (int t = 0; t < batch.length(); t++) {
                row.add(value.apply(b * batch.length() + t));
            }
            rows.add(row);
        }
        return rows;
    }

    @Test
    void aCorruptDatasetFailsItsJobVisiblyWhileAnotherJobFinishes() throws Exception {
        Path data = Files.createDirectories(temp.resolve("data"));
        for (String ext : new String[] {".bin", ".idx"}) {
            Files.copy(MQAR.resolve("mqar-train" + ext), data.resolve("good" + ext));
            Files.write(data.resolve("corrupt" + ext), "this is not a Megatron dataset".getBytes());
        }
        int steps = 2;
        // The job that finishes uses the global token mean (its loss weights need all M masks before the first pass).
        List<StepResult> direct = TrainingServer.trainDirectly(TrainingServer.tinyConfig(steps, "good", true),
                data.resolve("good"), temp.resolve("direct"));
        try (TrainingServer server = new TrainingServer(data, temp.resolve("jobs"))) {
            String bad = server.startJob(TrainingServer.tinyConfig(steps, "corrupt"));
            String good = server.startJob(TrainingServer.tinyConfig(steps, "good", true));
            CompletableFuture<TrainingServer.Events> goodEvents = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.follow(good, Integer.MAX_VALUE);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            TrainingServer.Events badEvents = server.follow(bad, Integer.MAX_VALUE);
            assertEquals("failed", badEvents.end());
            JsonNode status = server.status(bad);
            assertEquals("failed", status.path("state").asText(), status.toString());
            String error = status.path("error").asText();
            assertTrue(error.contains("stage failed") && error.contains("corrupt"), "error names the stage and the file: "
                    + error);
            TrainingServer.Events finished = goodEvents.get(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS);
            assertEquals("succeeded", finished.end());
            assertSameSteps(direct, 0, finished.steps());
            assertEquals(200, server.send(server.request("/healthz").build()).statusCode());
        }
    }

    @Test
    void aJobStoppedByShutdownResumesAfterRestartBitForBit() throws Exception {
        int steps = STEPS;
        Map<String, Object> config = CONFIG;
        List<StepResult> direct = direct();
        Path jobs = temp.resolve("jobs");
        String id;
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            id = server.startJob(config);
            assertEquals(1, server.follow(id, 1).steps().size());
        } // close = SIGTERM: finishes the step in progress, checkpoints, stops
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            JsonNode listing = TrainingServer.JSON.readTree(server.send(server.request("/v1/jobs").build()).body());
            assertTrue(listing.toString().contains(id), "the restarted server lists the unfinished job: " + listing);
            var resumed = server.send(server.request("/v1/jobs/" + id + "/resume")
                    .POST(java.net.http.HttpRequest.BodyPublishers.noBody()).build());
            assertTrue(resumed.statusCode() / 100 == 2, resumed.body());
            // The 202 names the step of the checkpoint the run resumes from, not 0.
            long checkpointed = Long.parseLong(Files.readString(jobs.resolve(id).resolve("checkpoints").resolve("latest"))
                    .strip().substring("step-".length()));
            assertTrue(checkpointed >= 1, "the shutdown checkpointed step " + checkpointed);
            assertEquals(checkpointed, TrainingServer.JSON.readTree(resumed.body()).get("step").asLong(), resumed.body());
            // The job's journal replays the steps before the restart, so the stream holds every step once.
            TrainingServer.Events events = server.follow(id, Integer.MAX_VALUE);
            assertEquals("succeeded", events.end());
            assertSameSteps(direct, 0, events.steps());
            assertEquals(steps, events.steps().get(events.steps().size() - 1).path("step").asLong());
        }
        try (var entries = Files.list(jobs.resolve(id).resolve("checkpoints"))) {
            assertTrue(entries.map(p -> p.getFileName().toString())
                    .allMatch(n -> n.matches("step-\\d{8}") || n.equals("latest")), "no half-written checkpoint left");
        }
    }

    @Test
    void aServerKilledMidJobRestartsAndTheJobResumesBitForBit() throws Exception {
        int steps = STEPS;
        Map<String, Object> config = CONFIG;
        List<StepResult> direct = direct();
        Path dir = Files.createDirectories(temp.resolve("forked"));
        String id;
        try (ForkedServer forked = new ForkedServer(dir, MQAR.getParent())) {
            TrainingServer client = new TrainingServer(forked.port());
            id = client.startJob(config);
            assertEquals(3, client.follow(id, 3).steps().size());
            forked.kill(); // mid-job: no shutdown hook, maybe mid-checkpoint
        }
        Path checkpoints = dir.resolve("jobs").resolve(id).resolve("checkpoints");
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), dir.resolve("jobs"))) {
            var resumed = server.send(server.request("/v1/jobs/" + id + "/resume")
                    .POST(java.net.http.HttpRequest.BodyPublishers.noBody()).build());
            assertTrue(resumed.statusCode() / 100 == 2, resumed.body());
            TrainingServer.Events events = server.follow(id, Integer.MAX_VALUE);
            assertEquals("succeeded", events.end());
            // The journal kept the steps of the killed run (a line cut by the kill dropped); the resumed run recomputed
            // those after its checkpoint, bit-identically, without repeating them: every step once, as the direct loop.
            assertSameSteps(direct, 0, events.steps());
        }
        try (var entries = Files.list(checkpoints)) {
            assertTrue(entries.map(p -> p.getFileName().toString())
                    .allMatch(n -> n.matches("step-\\d{8}") || n.equals("latest")), "no half-written checkpoint left");
        }
    }

    /** Step events {@code events} are the direct run's steps from index {@code from}: loss, MTP loss, norm, lr bit for bit. */
    private static void assertSameSteps(List<StepResult> direct, int from, List<JsonNode> events) {
        assertEquals(direct.size() - from, events.size(), "one event per step");
        for (int i = 0; i < events.size(); i++) {
            StepResult expected = direct.get(from + i);
            JsonNode event = events.get(i);
            assertEquals(expected.step(), event.path("step").asLong());
            // Exact: the server runs the same code in the same order; JSON doubles round-trip exactly.
            assertEquals(Double.doubleToLongBits(expected.loss()), Double.doubleToLongBits(event.path("loss").asDouble()),
                    "loss of step " + expected.step() + ": direct " + expected.loss() + ", server " + event.path("loss"));
            assertEquals(Double.doubleToLongBits(expected.mtpLoss()),
                    Double.doubleToLongBits(event.path("mtp_loss").asDouble()), "MTP loss of step " + expected.step());
            assertEquals(Double.doubleToLongBits(expected.gradNorm()),
                    Double.doubleToLongBits(event.path("grad_norm").asDouble()), "grad norm of step " + expected.step());
            assertEquals(Double.doubleToLongBits(expected.lr()), Double.doubleToLongBits(event.path("lr").asDouble()),
                    "lr of step " + expected.step());
        }
    }
}
