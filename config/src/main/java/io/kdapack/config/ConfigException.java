package io.kdapack.config;

/**
 * An invalid configuration: the key path (e.g. {@code train.optimizer.lr}), the value found, what is allowed and
 * where the value came from. An {@link IllegalArgumentException}, so that the command line ends with one line and
 * exit code 2, and the server answers 400 with {@code field = key()}.
 */
public final class ConfigException extends IllegalArgumentException {
    private final String key;
    private final String value;
    private final String allowed;

    /** Longest quoted value or key: an error about a 16 MB value must not be 16 MB itself. */
    static final int MAX_QUOTED = 80;

    public ConfigException(String key, Object value, String allowed, String source) {
        super(truncate(key) + " = " + render(value) + (source == null ? "" : " (from " + source + ")") + ": " + allowed);
        this.key = truncate(key);
        this.value = render(value);
        this.allowed = allowed;
    }

    /** Dotted key path. */
    public String key() {
        return key;
    }

    /** The offending value as written (its first {@link #MAX_QUOTED} characters). */
    public String value() {
        return value;
    }

    /** What the key accepts. */
    public String allowed() {
        return allowed;
    }

    private static String render(Object value) {
        return value instanceof String s ? "'" + truncate(s) + "'" : truncate(String.valueOf(value));
    }

    /** {@code text} itself, or its first {@link #MAX_QUOTED} characters and how long it was. */
    static String truncate(String text) {
        return text == null || text.length() <= MAX_QUOTED ? text
                : text.substring(0, MAX_QUOTED) + "… (" + text.length() + " characters)";
    }
}
