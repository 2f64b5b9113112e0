package io.kdapack.config;

import io.kdapack.core.model.ModelConfig;
import io.vertx.config.ConfigRetriever;
import io.vertx.config.ConfigRetrieverOptions;
import io.vertx.config.ConfigStoreOptions;
import io.vertx.config.yaml.YamlProcessor;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Loads the configuration with Vert.x config: three stores merged in this order, later ones overriding earlier
 * ones key by key (a deep merge):
 * <ol>
 *   <li>one YAML file ({@code --config FILE}; optional);</li>
 *   <li>environment variables {@code KDAPACK_<SECTION>_<KEY>}: the dotted key upper-cased with {@code .} → {@code _},
 *       e.g. {@code KDAPACK_TRAIN_OPTIMIZER_LR} → {@code train.optimizer.lr}, {@code KDAPACK_MODEL_KDA_NUM_V_HEADS} →
 *       {@code model.kda.num_v_heads};</li>
 *   <li>system properties {@code kdapack.<dotted key>}, e.g. {@code -Dkdapack.train.steps=2}.</li>
 * </ol>
 * Only variables and properties under the configuration's sections ({@code KDAPACK_MODEL_…}, {@code KDAPACK_TRAIN_…},
 * {@code KDAPACK_SERVER_…}, {@code KDAPACK_CLUSTER_…} and {@code kdapack.model.…} etc.) are configuration; one there that names no key is an error,
 * others (such as the launcher's {@code KDAPACK_JAVA_OPTS}) are left alone. Environment and property values are
 * strings; {@code null} sets a nullable key to null. Unset keys keep the defaults of the records.
 *
 * <p>Vert.x is asynchronous; loading is a one-off at start, so each call creates a {@link Vertx} instance, waits for
 * the merged document and closes the instance again.
 */
public final class ConfigLoader {
    static final String ENV_PREFIX = "KDAPACK_";
    static final String PROPERTY_PREFIX = "kdapack.";
    private static final long TIMEOUT_SECONDS = 30;
    private static final List<String> TOP_LEVEL_SECTIONS = Arrays.stream(KdapackConfig.class.getRecordComponents())
            .map(c -> ConfigBinder.snake(c.getName())).toList();

    private ConfigLoader() {
    }

    /** Loads {@code yamlFile} (may be null), then the process environment and system properties. */
    public static KdapackConfig load(Path yamlFile) {
        return load(yamlFile, System.getenv(), System.getProperties());
    }

    /**
     * Loads {@code yamlFile} (may be null), then {@code environment}, then {@code properties}.
     *
     * @throws ConfigException for an unknown key or an invalid value (naming the key, the value and what is allowed)
     * @throws IllegalArgumentException when the file is missing or not valid YAML
     */
    public static KdapackConfig load(Path yamlFile, Map<String, String> environment, Properties properties) {
        return load(yamlFile, environment, properties, ConfigRules.Uses.ALL);
    }

    /**
     * The model section of {@code yamlFile} (may be null), the process environment and system properties, for a
     * command that reads no dataset: every key is checked against its own rule, but only the model section's relations
     * are (a small vocabulary is fine although the default {@code train.data.eod_id} lies outside it).
     */
    public static ModelConfig loadModel(Path yamlFile) {
        return loadModel(yamlFile, System.getenv(), System.getProperties());
    }

    /** {@link #loadModel(Path)} with the given environment and properties. */
    public static ModelConfig loadModel(Path yamlFile, Map<String, String> environment, Properties properties) {
        return load(yamlFile, environment, properties, ConfigRules.Uses.MODEL).model();
    }

    /**
     * The server section of {@code yamlFile} (may be null), the process environment and system properties: every key
     * is checked against its own rule, no relation of the model and train sections (jobs bring their own).
     */
    public static ServerConfig loadServer(Path yamlFile) {
        return load(yamlFile, System.getenv(), System.getProperties(), ConfigRules.Uses.SERVER).server();
    }

    /**
     * The sections {@code kdapack serve} reads itself, {@code server} and {@code cluster}, of {@code yamlFile} (may be
     * null), the process environment and system properties: as {@link #loadServer}, both sections.
     */
    public static KdapackConfig loadServing(Path yamlFile) {
        return load(yamlFile, System.getenv(), System.getProperties(), ConfigRules.Uses.SERVER);
    }

    private static KdapackConfig load(Path yamlFile, Map<String, String> environment, Properties properties,
                                      ConfigRules.Uses uses) {
        Map<String, String> sources = new HashMap<>();
        ConfigRetrieverOptions options = new ConfigRetrieverOptions().setIncludeDefaultStores(false);
        if (yamlFile != null) {
            if (!Files.isRegularFile(yamlFile)) {
                throw new IllegalArgumentException("config file " + yamlFile + ": no such file");
            }
            options.addStore(new ConfigStoreOptions().setType("file").setFormat("yaml")
                    .setConfig(new JsonObject().put("path", yamlFile.toAbsolutePath().toString())));
        }
        JsonObject fromEnvironment = overrides(environmentKeys(environment), sources);
        JsonObject fromProperties = overrides(propertyKeys(properties), sources);
        options.addStore(new ConfigStoreOptions().setType("json").setConfig(fromEnvironment));
        options.addStore(new ConfigStoreOptions().setType("json").setConfig(fromProperties));
        String fileSource = yamlFile == null ? null : "file " + yamlFile;
        JsonObject merged = withVertx(vertx -> ConfigRetriever.create(vertx, options).getConfig(),
                yamlFile == null ? "configuration" : "config file " + yamlFile);
        return ConfigBinder.bind(merged, uses, key -> sources.getOrDefault(key, fileSource));
    }

    /**
     * Binds a configuration document that is already parsed (e.g. the JSON body of {@code POST /v1/jobs}), with
     * defaults for what it leaves out; no environment or system properties.
     */
    public static KdapackConfig fromDocument(Map<String, Object> document) {
        return ConfigBinder.bind(new JsonObject(new LinkedHashMap<>(document)), ConfigRules.Uses.ALL, key -> "document");
    }

    /** Parses and binds a YAML configuration document given as text, with Vert.x's YAML processor. */
    public static KdapackConfig fromYaml(String yaml) {
        JsonObject document = withVertx(vertx -> new YamlProcessor().process(vertx, new JsonObject(), Buffer.buffer(yaml)),
                "YAML document");
        return ConfigBinder.bind(document == null ? new JsonObject() : document, ConfigRules.Uses.ALL, key -> "document");
    }

    /** The environment variable that sets {@code key} (e.g. {@code train.optimizer.lr} → {@code KDAPACK_TRAIN_OPTIMIZER_LR}). */
    public static String environmentVariable(String key) {
        return ENV_PREFIX + key.toUpperCase(Locale.ROOT).replace('.', '_');
    }

    /** Every configuration key, dotted, in declaration order. */
    public static List<String> keys() {
        return ConfigBinder.keys().stream().map(ConfigBinder.Key::path).toList();
    }

    private static Map<String, Map.Entry<String, String>> environmentKeys(Map<String, String> environment) {
        Map<String, String> byVariable = new HashMap<>();
        for (String key : keys()) {
            byVariable.put(environmentVariable(key), key);
        }
        Map<String, Map.Entry<String, String>> out = new LinkedHashMap<>();
        environment.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
            String variable = e.getKey();
            if (!isUnderSection(variable, ENV_PREFIX, true)) {
                return;
            }
            String key = byVariable.get(variable);
            if (key == null) {
                throw new ConfigException(variable, e.getValue(), "environment variable names no configuration key "
                        + "(KDAPACK_ + the dotted key upper-cased, '.' → '_'; see docs/configuration.md)", null);
            }
            out.put(key, Map.entry("environment variable " + variable, e.getValue()));
        });
        return out;
    }

    private static Map<String, Map.Entry<String, String>> propertyKeys(Properties properties) {
        List<String> known = keys();
        Map<String, Map.Entry<String, String>> out = new LinkedHashMap<>();
        properties.stringPropertyNames().stream().sorted().forEach(name -> {
            if (!isUnderSection(name, PROPERTY_PREFIX, false)) {
                return;
            }
            String key = name.substring(PROPERTY_PREFIX.length());
            if (!known.contains(key)) {
                throw new ConfigException(key, properties.getProperty(name), "system property " + name
                        + " names no configuration key (kdapack. + the dotted key; see docs/configuration.md)", null);
            }
            out.put(key, Map.entry("system property " + name, properties.getProperty(name)));
        });
        return out;
    }

    /** True for {@code KDAPACK_TRAIN_…} / {@code kdapack.train.…} style names of the top-level sections. */
    private static boolean isUnderSection(String name, String prefix, boolean upperCase) {
        for (String section : TOP_LEVEL_SECTIONS) {
            String start = prefix + (upperCase ? section.toUpperCase(Locale.ROOT) + "_" : section + ".");
            if (name.startsWith(start)) {
                return true;
            }
        }
        return false;
    }

    /** A nested document of string values for the given dotted keys, recording where each came from. */
    private static JsonObject overrides(Map<String, Map.Entry<String, String>> values, Map<String, String> sources) {
        JsonObject root = new JsonObject();
        values.forEach((key, sourceAndValue) -> {
            sources.put(key, sourceAndValue.getKey());
            String[] parts = key.split("\\.");
            JsonObject section = root;
            for (int i = 0; i < parts.length - 1; i++) {
                JsonObject next = section.getJsonObject(parts[i]);
                if (next == null) {
                    next = new JsonObject();
                    section.put(parts[i], next);
                }
                section = next;
            }
            section.put(parts[parts.length - 1], sourceAndValue.getValue());
        });
        return root;
    }

    private static JsonObject withVertx(java.util.function.Function<Vertx, Future<JsonObject>> task, String what) {
        Vertx vertx = Vertx.vertx();
        try {
            return task.apply(vertx).toCompletionStage().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw new IllegalArgumentException(what + ": " + (cause.getMessage() == null ? cause.toString()
                    : cause.getMessage().replace('\n', ' ')), cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while loading the " + what, e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("loading the " + what + " took more than " + TIMEOUT_SECONDS + " s", e);
        } finally {
            closeQuietly(vertx);
        }
    }

    private static void closeQuietly(Vertx vertx) {
        try {
            vertx.close().toCompletionStage().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // The configuration is loaded; a slow or failed shutdown of the helper instance does not change it.
        }
    }
}
