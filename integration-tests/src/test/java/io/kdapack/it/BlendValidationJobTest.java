package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.TrainingCorpora;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job on a weighted blend of the two shipped corpora with validation every 2 of 3 steps, over HTTP: the step events
 * carry {@code val_loss}/{@code val_mtp_loss} after steps 2 and 3, bit for bit those of the direct loop, and
 * {@code /metrics} shows the last one; a blend prefix outside the data root is refused naming its key.
 */
class BlendValidationJobTest {
    private static final Path DATASETS = TrainingServer.repositoryRoot().resolve("datasets");

    @TempDir
    Path temp;

    @Test
    void blendedJobReportsMegatronsValidationLossInEventsAndMetrics() throws Exception {
        Map<String, Object> config = config(List.of(Map.of("weight", 0.8, "prefix", "mqar/mqar-train"),
                Map.of("weight", 0.2, "prefix", "mqar/mqar-heldout")));
        List<StepResult> direct = new ArrayList<>();
        KdapackConfig bound = ConfigLoader.fromDocument(config);
        try (Trainer trainer = Trainer.create(bound, HybridModels.FACTORY, TrainingCorpora.of(bound.train().data(),
                (path, key) -> DATASETS.resolve(path)), temp.resolve("direct"))) {
            while (!trainer.finished()) {
                direct.add(trainer.step());
            }
        }
        try (TrainingServer server = new TrainingServer(DATASETS, temp.resolve("jobs"))) {
            String id = server.startJob(config);
            TrainingServer.Events events = server.follow(id, Integer.MAX_VALUE);
            assertEquals("succeeded", events.end());
            assertEquals(3, events.steps().size());
            for (int i = 0; i < 3; i++) {
                JsonNode event = events.steps().get(i);
                StepResult expected = direct.get(i);
                if (i == 1 || i == 2) {
                    assertEquals(Double.doubleToLongBits(expected.valLoss()),
                            Double.doubleToLongBits(event.path("val_loss").asDouble()), "val_loss of step " + (i + 1));
                    assertEquals(Double.doubleToLongBits(expected.valMtpLoss()),
                            Double.doubleToLongBits(event.path("val_mtp_loss").asDouble()), "val_mtp_loss " + (i + 1));
                    assertEquals(Double.doubleToLongBits(expected.loss()),
                            Double.doubleToLongBits(event.path("loss").asDouble()), "loss of step " + (i + 1));
                } else {
                    assertFalse(event.has("val_loss"), event.toString());
                }
            }
            HttpResponse<String> metrics = server.send(server.request("/metrics").build());
            String line = "kdapack_job_val_loss{job=\"" + id + "\"} ";
            assertTrue(metrics.body().lines().anyMatch(l -> l.startsWith(line)
                    && Double.parseDouble(l.substring(line.length())) == direct.get(2).valLoss()), metrics.body());
        }
    }

    @Test
    void aBlendPrefixOutsideTheDataRootIsRefusedNamingItsKey() throws Exception {
        Map<String, Object> config = config(List.of(Map.of("weight", 1, "prefix", "mqar/mqar-train"),
                Map.of("weight", 1, "prefix", "../../etc/corpus")));
        try (TrainingServer server = new TrainingServer(DATASETS, temp.resolve("jobs"))) {
            HttpResponse<String> refused = server.send(server.request("/v1/jobs").header("Content-Type",
                    "application/json").POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                    TrainingServer.JSON.writeValueAsString(config))).build());
            assertEquals(400, refused.statusCode(), refused.body());
            assertTrue(refused.body().contains("train.data.blend[1].prefix"), refused.body());
        }
    }

    /** The tiny model of {@link TrainingServer#tinyConfig} for 3 steps on {@code blend}, validating every 2 steps. */
    private static Map<String, Object> config(List<Map<String, Object>> blend) {
        Map<String, Object> config = new LinkedHashMap<>(TrainingServer.tinyConfig(3, "unused"));
        @SuppressWarnings("unchecked")
        Map<String, Object> train = new LinkedHashMap<>((Map<String, Object>) config.get("train"));
        train.put("data", Map.of("blend", blend));
        train.put("eval_interval", 2);
        train.put("eval_iters", 1);
        config.put("train", train);
        return config;
    }
}
