package io.kdapack.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.core.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each command checks the relations of the sections it reads, and every key's own rule. */
class ConfigUsesTest {
    /** A model whose vocabulary (20) lies below the default train.data.eod_id (129); no train section. */
    private static final String SMALL_VOCABULARY = """
            model:
              vocab_size: 20
              kda: {num_heads: 1, num_v_heads: 2}
            """;

    @TempDir
    Path dir;

    @Test
    void aModelReaderAcceptsAVocabularyBelowTheDefaultEodId() throws Exception {
        Path file = Files.writeString(dir.resolve("small.yaml"), SMALL_VOCABULARY);
        ModelConfig model = ConfigLoader.loadModel(file, Map.of(), new Properties());
        assertEquals(20, model.vocabSize());
        assertEquals(2, model.kda().numVHeads());

        ConfigException training = assertThrows(ConfigException.class,
                () -> ConfigLoader.load(file, Map.of(), new Properties()));
        assertEquals("train.data.eod_id = 129 (from default): expected a token id < model.vocab_size (20)",
                training.getMessage());
    }

    @Test
    void aModelReaderStillChecksTheModelRelationsAndEveryKeysOwnRule() throws Exception {
        Path heads = Files.writeString(dir.resolve("heads.yaml"), "model:\n  kda: {num_heads: 2, num_v_heads: 3}\n");
        ConfigException e = assertThrows(ConfigException.class,
                () -> ConfigLoader.loadModel(heads, Map.of(), new Properties()));
        assertEquals("model.kda.num_v_heads = 3 (from file " + heads + "): expected a multiple of model.kda.num_heads (2)",
                e.getMessage());

        Path badLr = Files.writeString(dir.resolve("lr.yaml"), SMALL_VOCABULARY + "train:\n  optimizer: {lr: -1}\n");
        e = assertThrows(ConfigException.class, () -> ConfigLoader.loadModel(badLr, Map.of(), new Properties()));
        assertEquals("train.optimizer.lr = -1 (from file " + badLr + "): expected a number > 0", e.getMessage());
    }
}
