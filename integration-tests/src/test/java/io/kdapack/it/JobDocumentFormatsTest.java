package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code POST /v1/jobs} takes the configuration document as JSON or as YAML (with its content type): the same job. */
class JobDocumentFormatsTest {
    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");
    private static final int STEPS = 3;

    /** {@link TrainingServer#tinyConfig} written by hand as YAML, comments and block style included. */
    private static final String YAML = """
            # the integration tests' tiny hybrid model
            model:
              hidden_size: 32
              num_layers: 2
              full_attention_interval: 2   # layer 2 is MLA
              intermediate_size: 64
              kda: {num_heads: 1, num_v_heads: 1, head_dim: 16}
              mla:
                num_heads: 1
                kv_lora_rank: 16
                qk_nope_head_dim: 8
                qk_rope_head_dim: 4
                v_head_dim: 8
            train:
              seed: 5
              steps: 3
              micro_batch_size: 2
              num_microbatches: 2
              seq_length: 32
              threads: 1
              checkpoint: {interval: 2}
              optimizer:
                lr: 0.01
                warmup_steps: 1
              calculate_per_token_loss: false
              data:
                prefix: mqar/mqar-train
            """;

    @TempDir
    Path temp;

    @Test
    void aYamlBodyStartsTheSameJobAsTheJsonBodyWithTheSameLossesBitForBit() throws Exception {
        Path jobs = temp.resolve("jobs");
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            String fromJson = server.startJob(TrainingServer.tinyConfig(STEPS, "mqar/mqar-train"));
            String fromYaml = server.startJob(YAML, "application/yaml");
            CompletableFuture<TrainingServer.Events> jsonEvents = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.follow(fromJson, Integer.MAX_VALUE);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            TrainingServer.Events yamlEvents = server.follow(fromYaml, Integer.MAX_VALUE);
            TrainingServer.Events json = jsonEvents.get(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS);

            assertEquals("succeeded", json.end());
            assertEquals("succeeded", yamlEvents.end());
            assertEquals(STEPS, json.steps().size());
            List<JsonNode> yamlSteps = yamlEvents.steps();
            for (int i = 0; i < STEPS; i++) {
                for (String field : new String[] {"step", "loss", "mtp_loss", "tokens", "segments", "grad_norm", "lr"}) {
                    // Same configuration, same code: bit-identical (JSON doubles round-trip exactly).
                    assertEquals(json.steps().get(i).path(field).asText(), yamlSteps.get(i).path(field).asText(),
                            field + " of step " + (i + 1));
                }
            }
            // The bound configuration each job recorded (every key, defaults filled in) is the same document.
            JsonNode jsonRecord = TrainingServer.JSON.readTree(jobs.resolve(fromJson).resolve("job.json").toFile());
            JsonNode yamlRecord = TrainingServer.JSON.readTree(jobs.resolve(fromYaml).resolve("job.json").toFile());
            assertEquals(jsonRecord, yamlRecord);
            JsonNode status = server.status(fromYaml);
            assertEquals("succeeded", status.path("state").asText(), status.toString());
            assertEquals(STEPS, status.path("step").asLong());
        }
    }
}
