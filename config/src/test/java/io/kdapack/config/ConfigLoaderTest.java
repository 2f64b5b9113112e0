package io.kdapack.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.backend.Backend;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.optim.OptimizerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {
    private static final String YAML = """
            model:
              vocab_size: 300
              kda:
                lower_bound: -5
              mla:
                q_lora_rank: 32
            train:
              steps: 10
              backend: cpu
              optimizer:
                lr: 1e-3          # YAML 1.1 reads this as a string; it is still a number here
                warmup_steps: 2
              data:
                prefix: data/demo/recall
                eod_mask_loss: false
            server:
              port: 0
            """;

    @TempDir
    Path dir;

    private Path yaml(String text) throws Exception {
        Path file = dir.resolve("kdapack.yaml");
        Files.writeString(file, text);
        return file;
    }

    private static Properties properties(String... keyValues) {
        Properties p = new Properties();
        for (int i = 0; i < keyValues.length; i += 2) {
            p.setProperty(keyValues[i], keyValues[i + 1]);
        }
        return p;
    }

    @Test
    void nothingGivenMeansDefaults() {
        assertEquals(KdapackConfig.defaults(), ConfigLoader.load(null, Map.of(), new Properties()));
    }

    @Test
    void defaultsDescribeTheTinyHybridModel() {
        KdapackConfig c = KdapackConfig.defaults();
        assertEquals(List.of(false, false, false, true),
                List.of(c.model().isFullAttention(0), c.model().isFullAttention(1), c.model().isFullAttention(2),
                        c.model().isFullAttention(3)));
        assertEquals(8, c.train().globalBatchSize());
        assertEquals(KdapackConfig.defaults(), ConfigLoader.fromDocument(c.toMap()), "toMap round-trips");
    }

    @Test
    void yamlFileSetsKeysAndLeavesTheRestAtDefaults() throws Exception {
        KdapackConfig c = ConfigLoader.load(yaml(YAML), Map.of(), new Properties());
        assertEquals(300, c.model().vocabSize());
        assertEquals(-5.0, c.model().kda().lowerBound());
        assertEquals(32, c.model().mla().qLoraRank());
        assertEquals(10, c.train().steps());
        assertEquals(Backend.CPU, c.train().backend());
        assertEquals(1e-3, c.train().optimizer().lr());
        assertEquals("data/demo/recall", c.train().data().prefix());
        assertEquals(false, c.train().data().eodMaskLoss());
        assertEquals(0, c.server().port());
        assertEquals(ModelConfig.defaults().hiddenSize(), c.model().hiddenSize());
        assertEquals(OptimizerConfig.defaults().beta2(), c.train().optimizer().beta2());
        assertEquals(ServerConfig.defaults().host(), c.server().host());
    }

    @Test
    void environmentOverridesFileAndSystemPropertiesOverrideBoth() throws Exception {
        Path file = yaml(YAML);
        Map<String, String> env = Map.of("KDAPACK_TRAIN_STEPS", "20", "KDAPACK_TRAIN_OPTIMIZER_MIN_LR", "1e-4",
                "KDAPACK_MODEL_MLA_Q_LORA_RANK", "null", "KDAPACK_TRAIN_ISOLATION", "false",
                "KDAPACK_JAVA_OPTS", "-Xmx1g", "PATH", "/usr/bin");
        KdapackConfig c = ConfigLoader.load(file, env, new Properties());
        assertEquals(20, c.train().steps());
        assertEquals(1e-4, c.train().optimizer().minLr());
        assertEquals(1e-3, c.train().optimizer().lr(), "a sibling from the file survives the merge");
        assertNull(c.model().mla().qLoraRank(), "'null' resets a nullable key");
        assertEquals(false, c.train().isolation());

        c = ConfigLoader.load(file, env, properties("kdapack.train.steps", "30", "kdapack.model.kda.conv_size", "3",
                "java.version", "ignored", "kdapack.kernel", "not a configuration key, ignored"));
        assertEquals(30, c.train().steps());
        assertEquals(3, c.model().kda().convSize());
        assertEquals(1e-4, c.train().optimizer().minLr());
    }

    @Test
    void environmentVariableNamesAreTheUpperCasedKeysAndUnique() {
        assertEquals("KDAPACK_TRAIN_OPTIMIZER_LR", ConfigLoader.environmentVariable("train.optimizer.lr"));
        assertEquals("KDAPACK_MODEL_KDA_NUM_V_HEADS", ConfigLoader.environmentVariable("model.kda.num_v_heads"));
        List<String> keys = ConfigLoader.keys();
        assertEquals(keys.size(), new HashSet<>(keys.stream().map(ConfigLoader::environmentVariable).toList()).size());
        assertEquals(88, keys.size()); // 67, train.data_parallel, the 9 of the cluster section, the 11 of keep_last and server.inference
    }

    @Test
    void yamlTextAndDocumentsBindLikeFiles() {
        KdapackConfig c = ConfigLoader.fromYaml("train:\n  steps: 2\n  optimizer:\n    warmup_steps: 0\n");
        assertEquals(2, c.train().steps());
        assertEquals(KdapackConfig.defaults(), ConfigLoader.fromYaml(""));
        assertEquals(KdapackConfig.defaults(), ConfigLoader.fromYaml("server:\n"), "an empty section keeps the defaults");
        assertEquals(7, ConfigLoader.fromDocument(Map.of("model", Map.of("num_layers", 7))).model().numLayers());
    }

    @Test
    void fingerprintCoversModelAndTrainOnly() {
        KdapackConfig a = KdapackConfig.defaults();
        KdapackConfig otherPort = ConfigLoader.fromDocument(Map.of("server", Map.of("port", 9)));
        KdapackConfig otherModel = ConfigLoader.fromDocument(Map.of("model", Map.of("num_layers", 8)));
        assertEquals(64, a.fingerprint().length());
        assertEquals(a.fingerprint(), otherPort.fingerprint());
        assertNotEquals(a.fingerprint(), otherModel.fingerprint());
    }

    @Test
    void unknownKeysNameThePathAndWhatIsAllowed() throws Exception {
        Path file = yaml("model:\n  kda:\n    num_head: 4\n");
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(file, Map.of(), new Properties()));
        assertEquals("model.kda.num_head", e.key());
        assertEquals("model.kda.num_head = 4 (from file " + file + "): unknown key; allowed under model.kda: num_heads, "
                + "num_v_heads, head_dim, conv_size, lower_bound, norm_eps", e.getMessage());

        e = assertThrows(ConfigException.class, () -> ConfigLoader.fromYaml("trian:\n  steps: 3\n"));
        assertTrue(e.getMessage().startsWith("trian = {\"steps\":3} (from document): unknown key; allowed at the top level: "
                + "model, train, server"), e.getMessage());

        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null,
                Map.of("KDAPACK_TRAIN_OPTIMIZER_LRR", "1"), new Properties()));
        assertEquals("KDAPACK_TRAIN_OPTIMIZER_LRR", e.key());
        assertTrue(e.getMessage().contains("environment variable names no configuration key"), e.getMessage());

        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null, Map.of(), properties("kdapack.train.stepz", "1")));
        assertEquals("train.stepz", e.key());
        assertTrue(e.getMessage().contains("system property kdapack.train.stepz names no configuration key"), e.getMessage());
    }

    @Test
    void invalidValuesNameKeyValueSourceAndWhatIsAllowed() throws Exception {
        Path file = yaml("train:\n  steps: many\n");
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(file, Map.of(), new Properties()));
        assertEquals("train.steps = 'many' (from file " + file + "): expected an integer >= 1", e.getMessage());
        assertEquals("'many'", e.value());
        assertEquals("expected an integer >= 1", e.allowed());

        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null,
                Map.of("KDAPACK_TRAIN_OPTIMIZER_LR", "-1"), new Properties()));
        assertEquals("train.optimizer.lr = '-1' (from environment variable KDAPACK_TRAIN_OPTIMIZER_LR): expected a number > 0",
                e.getMessage());

        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null, Map.of(),
                properties("kdapack.train.backend", "tpu")));
        assertEquals("train.backend = 'tpu' (from system property kdapack.train.backend): expected one of auto, cpu, cuda, reference",
                e.getMessage());
    }

    @Test
    void typeErrors() {
        expect("train.isolation", "maybe", "expected true or false");
        expect("train.steps", 2.5, "expected an integer >= 1");
        expect("train.steps", null, "expected an integer, not null");
        expect("train.optimizer.lr", "NaN", "expected a number > 0");
        expect("train.data.split", true, "expected a string");
        expect("model.hidden_size", 1L << 40, "expected an integer >= 1");
        // A document has types: text where a number belongs (or the reverse) is refused, not coerced.
        expect("train.steps", "3", "expected an integer >= 1");
        expect("train.isolation", "true", "expected true or false");
        expect("train.data.prefix", 123, "expected a string");
        ConfigException huge = assertThrows(ConfigException.class, () -> ConfigLoader.fromDocument(
                Map.of("train", Map.of("data", Map.of("prefix", 7, "unknown_" + "x".repeat(100_000), "y".repeat(100_000))))));
        assertTrue(huge.getMessage().length() < 1000, "quoted keys and values are truncated: "
                + huge.getMessage().length() + " characters");
        assertTrue(huge.getMessage().contains("… (100000 characters)"), huge.getMessage());
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.fromDocument(Map.of("model", 5)));
        assertEquals("model", e.key());
        assertTrue(e.getMessage().contains("expected a section (mapping) with keys vocab_size, hidden_size"), e.getMessage());
    }

    @Test
    void everyRuleRejectsABadValue() {
        Map<String, Object> bad = Map.ofEntries(
                Map.entry("model.vocab_size", 0), Map.entry("model.hidden_size", 0), Map.entry("model.num_layers", 0),
                Map.entry("model.full_attention_interval", 0), Map.entry("model.intermediate_size", -3),
                Map.entry("model.rms_norm_eps", 0), Map.entry("model.kda.num_heads", 0), Map.entry("model.kda.num_v_heads", 0),
                Map.entry("model.kda.head_dim", 0), Map.entry("model.kda.conv_size", 0), Map.entry("model.kda.lower_bound", 0),
                Map.entry("model.kda.norm_eps", 1.5), Map.entry("model.mla.num_heads", 0), Map.entry("model.mla.q_lora_rank", 0),
                Map.entry("model.mla.kv_lora_rank", 0), Map.entry("model.mla.qk_nope_head_dim", 0),
                Map.entry("model.mla.qk_rope_head_dim", 3), Map.entry("model.mla.v_head_dim", 0),
                Map.entry("model.mla.rope_theta", 0), Map.entry("model.mtp.depth", 2), Map.entry("model.mtp.loss_factor", -0.1),
                Map.entry("train.seed", 4294967296L), Map.entry("train.steps", 0), Map.entry("train.micro_batch_size", 0),
                Map.entry("train.num_microbatches", 0), Map.entry("train.seq_length", 0), Map.entry("train.threads", -1),
                Map.entry("train.optimizer.lr", 0), Map.entry("train.optimizer.min_lr", -1),
                Map.entry("train.optimizer.warmup_steps", -1), Map.entry("train.optimizer.weight_decay", -0.5),
                Map.entry("train.optimizer.beta1", 1), Map.entry("train.optimizer.beta2", -0.1), Map.entry("train.optimizer.eps", 0),
                Map.entry("train.optimizer.clip_grad", -1), Map.entry("train.data.prefix", " "),
                Map.entry("train.data.split", "1,2,3,4"), Map.entry("train.data.eod_id", -1), Map.entry("train.data.pad_id", -2),
                Map.entry("train.checkpoint.dir", ""), Map.entry("train.checkpoint.interval", -1),
                Map.entry("train.checkpoint.keep_last", -1), Map.entry("server.inference.max_sequences", 0),
                Map.entry("server.inference.max_queued_requests", -1), Map.entry("server.inference.state_budget_bytes", 0),
                Map.entry("server.inference.max_context", 1), Map.entry("server.inference.max_tokens", 0),
                Map.entry("server.inference.max_prompts", 0), Map.entry("server.inference.prefill_chunk", 0),
                Map.entry("server.inference.max_models", 0), Map.entry("server.inference.retry_after_seconds", 0),
                Map.entry("server.inference.threads", -1), Map.entry("server.host", ""),
                Map.entry("server.port", 70000), Map.entry("server.token", "a b"), Map.entry("server.token_file", ""),
                Map.entry("server.max_body_bytes", 0), Map.entry("server.data_root", ""),
                Map.entry("server.event_batch_ms", -1), Map.entry("server.memory_budget", -1),
                Map.entry("server.max_running_jobs", 0), Map.entry("server.max_queued_jobs", -1),
                Map.entry("server.max_connections", 0), Map.entry("server.max_connections_per_address", 0),
                Map.entry("server.idle_timeout_ms", 99), Map.entry("server.request_timeout_ms", 0),
                Map.entry("server.max_step_tokens", 0), Map.entry("train.eval_interval", -1),
                Map.entry("train.eval_iters", 0), Map.entry("model.tokenizer", " "), Map.entry("cluster.host", " "),
                Map.entry("train.data_parallel", 0),
                Map.entry("cluster.port", 65536), Map.entry("cluster.stable_after_ms", 99),
                Map.entry("cluster.failure_timeout_ms", 0), Map.entry("cluster.join_timeout_ms", 3_600_001L));
        assertEquals(ConfigRules.RULES.keySet(), bad.keySet(), "every rule has a bad value here");
        assertTrue(ConfigLoader.keys().containsAll(ConfigRules.RULES.keySet()), "every rule names a real key");
        bad.forEach((key, value) -> expect(key, value, ConfigRules.RULES.get(key).allowed()));
        expect("model.kda.lower_bound", -5.5, "expected null (softplus gate) or a number in [-5, 0)");
        expect("train.data.split", "0,0,0", "not all zero");
        expect("server.event_batch_ms", 3_600_001L, ConfigRules.RULES.get("server.event_batch_ms").allowed());
    }

    @Test
    void relationsBetweenKeys() {
        expect(Map.of("train", Map.of("optimizer", Map.of("lr", 1e-3, "min_lr", 1e-2))),
                "train.optimizer.min_lr = 0.01 (from document): expected a number <= train.optimizer.lr (0.001)");
        expect(Map.of("train", Map.of("steps", 2)),
                "train.optimizer.warmup_steps = 10 (from default): expected an integer < train.steps (2): the cosine decay "
                        + "needs at least one step");
        expect(Map.of("model", Map.of("kda", Map.of("num_heads", 2, "num_v_heads", 3))),
                "model.kda.num_v_heads = 3 (from document): expected a multiple of model.kda.num_heads (2)");
        expect(Map.of("model", Map.of("vocab_size", 100)),
                "train.data.eod_id = 129 (from default): expected a token id < model.vocab_size (100)");
        expect(Map.of("train", Map.of("data", Map.of("pad_id", 129))),
                "train.data.pad_id = 129 (from document): expected -1 or a token id < model.vocab_size (132) other than "
                        + "train.data.eod_id (129)");
    }

    @Test
    void missingOrMalformedFiles() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConfigLoader.load(dir.resolve("absent.yaml"), Map.of(), new Properties()));
        assertTrue(e.getMessage().endsWith("absent.yaml: no such file"), e.getMessage());
        Path broken = yaml("model: [unclosed\n");
        e = assertThrows(IllegalArgumentException.class, () -> ConfigLoader.load(broken, Map.of(), new Properties()));
        assertTrue(e.getMessage().startsWith("config file " + broken + ": "), e.getMessage());
    }

    @Test
    void referencePageDocumentsEveryKeyWithItsDefault() throws Exception {
        List<String> rows = Files.readAllLines(Path.of("..", "docs", "configuration.md"));
        for (ConfigBinder.Key key : ConfigBinder.keys()) {
            String row = rows.stream().filter(r -> r.startsWith("| `" + key.path() + "` |")).findFirst()
                    .orElseThrow(() -> new AssertionError("docs/configuration.md has no row for `" + key.path() + "`"));
            String documented = row.split("\\|")[3].trim().replace("`", "");
            Object actual = key.defaultValue();
            if (actual instanceof Number n) {
                assertEquals(n.doubleValue(), Double.parseDouble(documented), key.path());
            } else {
                String expected = actual instanceof Enum<?> e ? e.name().toLowerCase(java.util.Locale.ROOT) : String.valueOf(actual);
                assertEquals(expected, documented, key.path());
            }
        }
    }

    private static void expect(String key, Object value, String allowed) {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.fromDocument(nest(key, value)),
                key + " = " + value);
        assertEquals(key, e.key());
        assertTrue(e.getMessage().contains(allowed), e.getMessage());
    }

    private static void expect(Map<String, Object> document, String message) {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.fromDocument(document));
        assertEquals(message, e.getMessage());
    }

    /** {@code a.b.c} → {a: {b: {c: value}}}, with a null value allowed. */
    private static Map<String, Object> nest(String key, Object value) {
        String[] parts = key.split("\\.");
        Map<String, Object> leaf = new java.util.HashMap<>();
        leaf.put(parts[parts.length - 1], value);
        Map<String, Object> node = leaf;
        for (int i = parts.length - 2; i >= 0; i--) {
            node = Map.of(parts[i], node);
        }
        return node;
    }
}
