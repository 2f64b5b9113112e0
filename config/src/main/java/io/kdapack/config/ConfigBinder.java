package io.kdapack.config;

import io.vertx.core.json.JsonObject;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Binds a merged configuration document to the records. The records are the schema: a record component
 * {@code microBatchSize} is the key {@code micro_batch_size}, a record-typed component is a section, a boxed
 * {@code Integer}/{@code Double} or a {@code String} component may be {@code null}, and the values of the
 * {@code defaults()} instances are the defaults. A {@code List} of records is a list of mappings (every key of the
 * record required; in the environment or a system property, the record's own text form, see {@link #bindList}). Unknown
 * keys, wrong types and values outside
 * {@link ConfigRules#RULES} fail with a {@link ConfigException}.
 */
final class ConfigBinder {

    /** One leaf key: dotted path, Java type, and whether {@code null} is allowed. */
    record Key(String path, Class<?> type, boolean nullable, Object defaultValue) {
    }

    private ConfigBinder() {
    }

    /** Every leaf key, in declaration order. */
    static List<Key> keys() {
        List<Key> keys = new ArrayList<>();
        collectKeys(KdapackConfig.class, KdapackConfig.defaults(), "", keys);
        return keys;
    }

    /** Section paths ({@code model}, {@code model.kda}, …). */
    static List<String> sections() {
        List<String> sections = new ArrayList<>();
        collectSections(KdapackConfig.class, "", sections);
        return sections;
    }

    /**
     * @param document the merged document (YAML file, environment, system properties)
     * @param uses     the sections the caller reads: their relations are checked
     * @param sourceOf where the value of a dotted key that the document sets came from
     */
    static KdapackConfig bind(JsonObject document, ConfigRules.Uses uses, Function<String, String> sourceOf) {
        Set<String> given = new HashSet<>();
        KdapackConfig config = bindRecord(KdapackConfig.class, KdapackConfig.defaults(), document, "", sourceOf, given);
        ConfigRules.checkRelations(config, uses, key -> given.contains(key) ? sourceOf.apply(key) : "default");
        return config;
    }

    static Map<String, Object> toMap(Record record) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (RecordComponent c : record.getClass().getRecordComponents()) {
            Object value = accessor(c, record);
            out.put(snake(c.getName()), value instanceof Record r ? toMap(r) : value instanceof Enum<?> e
                    ? e.name().toLowerCase(Locale.ROOT) : value instanceof List<?> list
                    ? list.stream().map(v -> v instanceof Record r ? toMap(r) : v).toList() : value);
        }
        return out;
    }

    /** {@code microBatchSize} → {@code micro_batch_size}. */
    static String snake(String camel) {
        StringBuilder b = new StringBuilder();
        for (char ch : camel.toCharArray()) {
            if (Character.isUpperCase(ch)) {
                b.append('_').append(Character.toLowerCase(ch));
            } else {
                b.append(ch);
            }
        }
        return b.toString();
    }

    private static <R extends Record> R bindRecord(Class<R> type, R defaults, JsonObject json, String path,
                                                   Function<String, String> sourceOf, Set<String> given) {
        RecordComponent[] components = type.getRecordComponents();
        List<String> allowed = Arrays.stream(components).map(c -> snake(c.getName())).toList();
        for (String field : json.fieldNames()) {
            if (!allowed.contains(field)) {
                String key = join(path, field);
                throw new ConfigException(key, json.getValue(field), "unknown key; allowed "
                        + (path.isEmpty() ? "at the top level" : "under " + path) + ": " + String.join(", ", allowed),
                        sourceOf.apply(key));
            }
        }
        Object[] args = new Object[components.length];
        for (int i = 0; i < components.length; i++) {
            RecordComponent c = components[i];
            String name = snake(c.getName());
            String key = join(path, name);
            Object defaultValue = defaults == null ? null : accessor(c, defaults);
            if (!json.containsKey(name) && defaults == null) {
                throw new ConfigException(key, null, "missing; each entry needs the keys " + String.join(", ", allowed),
                        sourceOf.apply(key));
            } else if (!json.containsKey(name)) {
                args[i] = defaultValue;
            } else if (c.getType() == List.class) {
                args[i] = bindList(c, json.getValue(name), key, sourceOf, given);
                given.add(key);
            } else if (c.getType().isRecord()) {
                args[i] = bindSection(c, (Record) defaultValue, json.getValue(name), key, sourceOf, given);
            } else {
                args[i] = convert(json.getValue(name), c.getType(), key, sourceOf.apply(key));
                given.add(key);
            }
        }
        try {
            Constructor<R> constructor = type.getDeclaredConstructor(
                    Arrays.stream(components).map(RecordComponent::getType).toArray(Class<?>[]::new));
            return constructor.newInstance(args);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot construct " + type.getSimpleName(), e);
        }
    }

    @SuppressWarnings("unchecked")
    private static Record bindSection(RecordComponent c, Record defaults, Object value, String key,
                                      Function<String, String> sourceOf, Set<String> given) {
        if (value == null) {
            return defaults; // an empty YAML section ("server:") keeps every default
        }
        if (!(value instanceof JsonObject section)) {
            throw new ConfigException(key, value, "expected a section (mapping) with keys "
                    + String.join(", ", Arrays.stream(c.getType().getRecordComponents()).map(rc -> snake(rc.getName())).toList()),
                    sourceOf.apply(key));
        }
        return bindRecord((Class<Record>) c.getType(), defaults, section, key, sourceOf, given);
    }

    /**
     * A list of records: {@code null}, a list of mappings bound entry by entry (keys {@code key[i].field}), or, for
     * {@link BlendEntry} (the one list key), Megatron's text form {@code "W1 P1 W2 P2 …"}, which is what an environment
     * variable or a system property can hold.
     */
    @SuppressWarnings("unchecked")
    private static List<Record> bindList(RecordComponent c, Object value, String key, Function<String, String> sourceOf,
                                         Set<String> given) {
        Class<Record> element = (Class<Record>) (Class<?>) ((java.lang.reflect.ParameterizedType) c.getGenericType())
                .getActualTypeArguments()[0];
        if (element == (Class<?>) String.class) {
            return (List<Record>) (List<?>) bindStrings(value, key, sourceOf.apply(key));
        }
        if (value == null || value instanceof String s && s.trim().equals("null")) {
            return null;
        }
        if (value instanceof String text && element == (Class<?>) BlendEntry.class) {
            try {
                return List.copyOf(BlendEntry.parseMegatron(text));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(key, text, e.getMessage(), sourceOf.apply(key));
            }
        }
        if (!(value instanceof io.vertx.core.json.JsonArray array)) {
            throw new ConfigException(key, value, "expected a list of mappings with keys " + String.join(", ",
                    Arrays.stream(element.getRecordComponents()).map(rc -> snake(rc.getName())).toList())
                    + (element == (Class<?>) BlendEntry.class ? ", or the text 'W1 P1 W2 P2 …'" : ""), sourceOf.apply(key));
        }
        List<Record> out = new ArrayList<>();
        for (int i = 0; i < array.size(); i++) {
            String at = key + "[" + i + "]";
            if (!(array.getValue(i) instanceof JsonObject entry)) {
                throw new ConfigException(at, array.getValue(i), "expected a mapping with keys " + String.join(", ",
                        Arrays.stream(element.getRecordComponents()).map(rc -> snake(rc.getName())).toList()),
                        sourceOf.apply(key));
            }
            out.add(bindRecord(element, null, entry, at, k -> sourceOf.apply(key), given));
        }
        return out;
    }

    /**
     * A list of strings ({@code cluster.seed_nodes}): a list of non-empty strings, or, from an environment variable or
     * a system property, one text with the entries separated by commas ({@code "a:2552,b:2552"}; empty text: none).
     */
    private static List<String> bindStrings(Object value, String key, String source) {
        if (value instanceof String text && isText(source)) {
            return text.isBlank() ? List.of() : Arrays.stream(text.split(",")).map(String::trim).toList();
        }
        if (!(value instanceof io.vertx.core.json.JsonArray array)) {
            throw new ConfigException(key, value, "expected a list of strings", source);
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < array.size(); i++) {
            if (!(array.getValue(i) instanceof String entry) || entry.isBlank()) {
                throw new ConfigException(key + "[" + i + "]", array.getValue(i), "expected a non-empty string", source);
            }
            out.add(entry.trim());
        }
        return List.copyOf(out);
    }

    private static Object convert(Object raw, Class<?> type, String key, String source) {
        boolean nullable = !type.isPrimitive() && !type.isEnum();
        if (raw == null || nullable && raw instanceof String s && s.trim().equals("null")) {
            if (nullable) {
                return null;
            }
            throw new ConfigException(key, null, "expected " + typeName(type) + ", not null", source);
        }
        Object value = parse(raw, type, isText(source));
        if (value == null) {
            ConfigRules.Rule rule = ConfigRules.RULES.get(key);
            throw new ConfigException(key, raw, rule != null && type != String.class ? rule.allowed()
                    : "expected " + typeName(type), source);
        }
        ConfigRules.Rule rule = ConfigRules.RULES.get(key);
        if (rule != null && !rule.test().test(value)) {
            throw new ConfigException(key, raw, rule.allowed(), source);
        }
        return value;
    }

    /**
     * Environment variables and system properties are text whatever they set; a document or file has types of its
     * own, and there {@code "steps": "3"} or {@code "prefix": 123} is a wrong type, not something to coerce. One
     * exception: text for a real number, because YAML 1.1 reads {@code 1e-3} as text.
     */
    private static boolean isText(String source) {
        return source != null && (source.startsWith("environment variable") || source.startsWith("system property"));
    }

    /** The value as {@code type}, or null when it cannot be one; text is parsed only when {@code fromText}. */
    private static Object parse(Object raw, Class<?> type, boolean fromText) {
        if (raw instanceof String && !fromText && type != String.class && !type.isEnum()
                && type != double.class && type != Double.class) {
            return null;
        }
        if (type == int.class || type == Integer.class || type == long.class) {
            Long l = parseLong(raw);
            if (l == null || type != long.class && l != l.intValue()) {
                return null;
            }
            return type == long.class ? l : (Object) l.intValue();
        }
        if (type == double.class || type == Double.class) {
            Double d = raw instanceof Number n ? Double.valueOf(n.doubleValue()) : parseDouble(raw);
            return d != null && Double.isFinite(d) ? d : null;
        }
        if (type == boolean.class) {
            if (raw instanceof Boolean b) {
                return b;
            }
            String s = raw instanceof String str ? str.trim().toLowerCase(Locale.ROOT) : "";
            return s.equals("true") ? Boolean.TRUE : s.equals("false") ? Boolean.FALSE : null;
        }
        if (type == String.class) {
            return raw instanceof String || fromText && raw instanceof Number ? raw.toString() : null;
        }
        if (type.isEnum() && raw instanceof String s) {
            for (Object constant : type.getEnumConstants()) {
                if (((Enum<?>) constant).name().equalsIgnoreCase(s.trim())) {
                    return constant;
                }
            }
        }
        return null;
    }

    private static Long parseLong(Object raw) {
        if (raw instanceof Integer || raw instanceof Long || raw instanceof Short) {
            return ((Number) raw).longValue();
        }
        if (raw instanceof String s) {
            try {
                return Long.parseLong(s.trim());
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }

    private static Double parseDouble(Object raw) {
        if (!(raw instanceof String s)) {
            return null;
        }
        try {
            return Double.parseDouble(s.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String typeName(Class<?> type) {
        if (type == int.class || type == Integer.class || type == long.class) {
            return "an integer";
        }
        if (type == double.class || type == Double.class) {
            return "a number";
        }
        if (type == boolean.class) {
            return "true or false";
        }
        if (type.isEnum()) {
            return "one of " + String.join(", ", Arrays.stream(type.getEnumConstants())
                    .map(e -> ((Enum<?>) e).name().toLowerCase(Locale.ROOT)).toList());
        }
        return "a string";
    }

    private static void collectKeys(Class<?> type, Object defaults, String path, List<Key> out) {
        for (RecordComponent c : type.getRecordComponents()) {
            String key = join(path, snake(c.getName()));
            Object value = accessor(c, (Record) defaults);
            if (c.getType().isRecord()) {
                collectKeys(c.getType(), value, key, out);
            } else {
                out.add(new Key(key, c.getType(), !c.getType().isPrimitive() && !c.getType().isEnum(), value));
            }
        }
    }

    private static void collectSections(Class<?> type, String path, List<String> out) {
        for (RecordComponent c : type.getRecordComponents()) {
            if (c.getType().isRecord()) {
                String key = join(path, snake(c.getName()));
                out.add(key);
                collectSections(c.getType(), key, out);
            }
        }
    }

    private static Object accessor(RecordComponent c, Record record) {
        try {
            return c.getAccessor().invoke(record);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read " + c.getName(), e);
        }
    }

    private static String join(String path, String name) {
        return path.isEmpty() ? name : path + "." + name;
    }
}
