package io.kdapack.api.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.HybridModels;
import io.kdapack.training.pipeline.MemoryEstimate;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JobMemoryModelTest {

    private static final Path DEMO = DatasetPaths.trainPrefix(null);

    private static KdapackConfig config(Map<String, Object> document) {
        return ConfigLoader.fromDocument(document);
    }

    /** The count against the model the trainer builds: every variant of the weight table, exact. */
    @Test
    void parameterCountIsThatOfTheBuiltModel() {
        var variants = new Map[] {
                Map.of(),
                Map.of("model", Map.of("tie_word_embeddings", true, "mtp", Map.of("depth", 0))),
                Map.of("model", Map.of("num_layers", 5, "full_attention_interval", 2, "kda",
                        Map.of("num_heads", 1, "num_v_heads", 3, "head_dim", 8, "conv_size", 3),
                        "mla", Map.of("q_lora_rank", 12, "num_heads", 3))),
        };
        for (Map<?, ?> variant : variants) {
            @SuppressWarnings("unchecked")
            KdapackConfig c = config((Map<String, Object>) variant);
            long built = HybridModels.FACTORY.create(c.model(), c.train()).parameters().stream()
                    .mapToLong(Parameter::size).sum();
            assertEquals((double) built, JobMemoryModel.parameterCount(c.model()), "config " + variant);
        }
    }

    @Test
    void theIssuesOversizedJobsAreFarOverAHeapAndNameTheirKey() {
        MemoryEstimate wide = JobMemoryModel.estimate(config(Map.of("model", Map.of("hidden_size", 1_000_000),
                "train", Map.of("steps", 3, "optimizer", Map.of("warmup_steps", 0)))), DEMO);
        assertTrue(wide.bytes() > 100L << 30, "hidden_size 1e6: " + MemoryEstimate.format(wide.bytes()));
        assertEquals("model.hidden_size", wide.largestKey());
        assertTrue(wide.explanation().contains("model.hidden_size = 1000000"), wide.explanation());

        MemoryEstimate longRows = JobMemoryModel.estimate(config(Map.of("train", Map.of("seq_length", 1_000_000_000,
                "steps", 3, "optimizer", Map.of("warmup_steps", 0)))), DEMO);
        assertTrue(longRows.bytes() > 1L << 40, "seq_length 1e9: " + MemoryEstimate.format(longRows.bytes()));
        assertEquals("train.seq_length", longRows.largestKey());
    }

    /** The demo job (≈ 0.4 M parameters, 512-token micro-batches) must fit a small heap, with room to spare. */
    @Test
    void theDemoJobFitsInAFewHundredMegabytes() {
        MemoryEstimate demo = JobMemoryModel.estimate(KdapackConfig.defaults(), DEMO);
        assertTrue(demo.bytes() > 1L << 20 && demo.bytes() < 200L << 20, MemoryEstimate.format(demo.bytes()));
    }
}
