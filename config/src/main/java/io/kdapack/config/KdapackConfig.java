package io.kdapack.config;

import io.kdapack.core.model.ModelConfig;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;

/**
 * The whole configuration: one YAML document with the sections {@code model}, {@code train} and (optional)
 * {@code server} and {@code cluster}. Load it with {@link ConfigLoader}; every key is documented in {@code docs/configuration.md}.
 */
public record KdapackConfig(ModelConfig model, TrainConfig train, ServerConfig server, ClusterConfig cluster) {

    /** A configuration with the default (off) {@code cluster} section. */
    public KdapackConfig(ModelConfig model, TrainConfig train, ServerConfig server) {
        this(model, train, server, ClusterConfig.defaults());
    }

    public static KdapackConfig defaults() {
        return new KdapackConfig(ModelConfig.defaults(), TrainConfig.defaults(), ServerConfig.defaults(),
                ClusterConfig.defaults());
    }

    /** The configuration as a nested map of its YAML keys (every key, defaults included), in declaration order. */
    public Map<String, Object> toMap() {
        return ConfigBinder.toMap(this);
    }

    /**
     * SHA-256 (hex) of the {@code model} and {@code train} sections, for checkpoints: two runs with the same
     * fingerprint train the same model on the same data in the same way (the server and cluster sections do not count).
     */
    public String fingerprint() {
        Map<String, Object> all = toMap();
        String canonical = "model=" + all.get("model") + ";train=" + all.get("train");
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
