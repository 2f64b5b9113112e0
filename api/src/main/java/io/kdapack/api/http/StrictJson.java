package io.kdapack.api.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.util.stream.Collectors;

/**
 * Strict JSON (and YAML) for request bodies: unknown fields, wrong types (no string-to-number coercion, no
 * fractions for integers), duplicate keys and trailing content are all errors, turned into an
 * {@link ApiException} 400 that names the field.
 */
public final class StrictJson {

    /** Shared, thread-safe mapper for reading requests and writing responses. */
    public static final ObjectMapper MAPPER = strict(JsonMapper.builder()).build();
    private static final ObjectMapper YAML = strict(YAMLMapper.builder()).build();

    private StrictJson() {
    }

    private static <M extends ObjectMapper, B extends com.fasterxml.jackson.databind.cfg.MapperBuilder<M, B>> B strict(
            B builder) {
        return builder
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS)
                .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                // A number or boolean where a string belongs is a wrong type, not a string.
                .withCoercionConfig(LogicalType.Textual, config -> config
                        .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                        .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                        .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail));
    }

    /** Reads a JSON body into {@code type}. */
    public static <T> T read(byte[] body, Class<T> type) {
        requireBody(body);
        try {
            return MAPPER.readValue(body, type);
        } catch (IOException e) {
            throw translate(e, "JSON");
        }
    }

    /** Reads a JSON or YAML document that must be an object. */
    public static JsonNode readObject(byte[] body, boolean yaml) {
        requireBody(body);
        JsonNode node;
        try {
            node = (yaml ? YAML : MAPPER).readTree(body);
        } catch (IOException e) {
            throw translate(e, yaml ? "YAML" : "JSON");
        }
        if (node == null || !node.isObject()) {
            throw ApiException.badRequest("the document must be a " + (yaml ? "YAML mapping" : "JSON object"), null);
        }
        return node;
    }

    public static byte[] write(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getSimpleName(), e);
        }
    }

    private static void requireBody(byte[] body) {
        if (body.length == 0) {
            throw ApiException.badRequest("the request body is empty", null);
        }
    }

    private static ApiException translate(IOException e, String format) {
        return switch (e) {
            case UnrecognizedPropertyException unknown -> ApiException.badRequest(
                    "unknown field '" + unknown.getPropertyName() + "'", path(unknown));
            case ValueInstantiationException invalid when invalid.getCause() instanceof IllegalArgumentException cause ->
                    ApiException.badRequest(cause.getMessage(), path(invalid));
            case InvalidFormatException invalidFormat -> ApiException.badRequest("wrong type: "
                    + describe(invalidFormat.getValue()) + " is not a valid " + simpleName(invalidFormat.getTargetType()),
                    path(invalidFormat));
            case MismatchedInputException mismatch -> ApiException.badRequest(
                    "wrong type: expected " + simpleName(mismatch.getTargetType()), path(mismatch));
            case StreamReadException malformed -> ApiException.badRequest(
                    "malformed " + format + ": " + malformed.getOriginalMessage(), null);
            case JsonMappingException other -> ApiException.badRequest(other.getOriginalMessage(), path(other));
            default -> ApiException.badRequest("unreadable body: " + e.getMessage(), null);
        };
    }

    private static String describe(Object value) {
        return value instanceof String s ? "\"" + s + "\"" : String.valueOf(value);
    }

    private static String simpleName(Class<?> type) {
        if (type == null) {
            return "value";
        }
        if (type.isArray()) {
            return "array of " + simpleName(type.getComponentType());
        }
        return switch (type.getName()) {
            case "int", "java.lang.Integer", "long", "java.lang.Long" -> "integer";
            case "float", "java.lang.Float", "double", "java.lang.Double" -> "number";
            case "java.lang.String" -> "string";
            case "boolean", "java.lang.Boolean" -> "boolean";
            default -> "object";
        };
    }

    /** {@code tokens[1][3]}-style path of the field at fault, or null at the top level. */
    static String path(JsonMappingException e) {
        String path = e.getPath().stream()
                .map(ref -> ref.getFieldName() != null ? "." + ref.getFieldName() : "[" + ref.getIndex() + "]")
                .collect(Collectors.joining());
        return path.isEmpty() ? null : path.startsWith(".") ? path.substring(1) : path;
    }
}
