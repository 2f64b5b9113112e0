package io.kdapack.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.actors.inference.InferenceActor;
import io.kdapack.actors.inference.PromptInput;
import io.kdapack.inference.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The body of {@code POST /v1/completions} in the shape of OpenAI's completions API, checked field by field: every
 * error is a 400 that names the field. Fields: {@code model} (required), {@code prompt} (required: a string, an
 * array of token ids, or an array of either), {@code max_tokens} (16), {@code temperature} (1), {@code top_p} (1),
 * {@code top_k} (0: off), {@code seed} (0), {@code stop} (a string or up to four), {@code stream} (false),
 * {@code logprobs} (null: none; 0 to 5: each chosen token's log-probability and that many most likely alternatives). {@code n}, {@code best_of}, {@code echo} and
 * {@code suffix} are accepted only at their defaults; other fields OpenAI defines ({@code user},
 * {@code presence_penalty}, …) are ignored.
 *
 * @param logprobs whether each choice carries its tokens' log-probabilities
 */
public record CompletionRequest(String model, List<PromptInput> prompts, SamplingParams params, boolean stream,
                                boolean logprobs) {
    private static final Set<String> IGNORED_WHEN_DEFAULT = Set.of("n", "best_of", "echo", "suffix");

    public static CompletionRequest parse(byte[] body) {
        JsonNode root = StrictJson.readObject(body, false);
        JsonNode modelNode = root.get("model");
        if (modelNode == null || !modelNode.isTextual() || modelNode.asText().isBlank()) {
            throw ApiException.badRequest("model is required: a job id or a run directory under the data root",
                    "model");
        }
        List<PromptInput> prompts = prompts(root.get("prompt"));
        int maxTokens = integer(root, "max_tokens", 16);
        double temperature = number(root, "temperature", 1.0);
        double topP = number(root, "top_p", 1.0);
        int topK = integer(root, "top_k", 0);
        long seed = root.has("seed") && !root.get("seed").isNull() ? longInteger(root.get("seed"), "seed") : 0;
        List<String> stop = stop(root.get("stop"));
        boolean stream = bool(root, "stream", false);
        boolean logprobs = root.has("logprobs") && !root.get("logprobs").isNull();
        int topLogprobs = integer(root, "logprobs", 0);
        for (String field : IGNORED_WHEN_DEFAULT) {
            JsonNode value = root.get(field);
            boolean isDefault = value == null || value.isNull()
                    || (field.equals("n") || field.equals("best_of")) && value.isIntegralNumber() && value.asInt() == 1
                    || field.equals("echo") && value.isBoolean() && !value.asBoolean();
            if (!isDefault) {
                throw ApiException.badRequest(field + ": not supported (only its default), got " + value, field);
            }
        }
        SamplingParams params;
        try {
            params = new SamplingParams(maxTokens, temperature, topK, topP, seed, stop, topLogprobs);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage(), fieldOf(e.getMessage()));
        }
        return new CompletionRequest(modelNode.asText(), prompts, params, stream, logprobs);
    }

    private static List<PromptInput> prompts(JsonNode prompt) {
        if (prompt == null || prompt.isNull()) {
            throw ApiException.badRequest("prompt is required: a string, an array of token ids, or an array of either",
                    "prompt");
        }
        if (prompt.isTextual()) {
            return List.of(textPrompt(prompt, "prompt"));
        }
        if (!prompt.isArray() || prompt.isEmpty()) {
            throw ApiException.badRequest("prompt must be a non-empty string, token-id array or array of either, got "
                    + abbreviate(prompt), "prompt");
        }
        if (prompt.get(0).isIntegralNumber()) {
            return List.of(PromptInput.ids(ids(prompt, "prompt")));
        }
        List<PromptInput> prompts = new ArrayList<>();
        for (int i = 0; i < prompt.size(); i++) {
            JsonNode item = prompt.get(i);
            String field = "prompt[" + i + "]";
            if (item.isTextual()) {
                prompts.add(textPrompt(item, field));
            } else if (item.isArray() && !item.isEmpty()) {
                prompts.add(PromptInput.ids(ids(item, field)));
            } else {
                throw ApiException.badRequest(field + " must be a non-empty string or token-id array, got "
                        + abbreviate(item), field);
            }
        }
        return prompts;
    }

    private static PromptInput textPrompt(JsonNode node, String field) {
        if (node.asText().isEmpty()) {
            throw ApiException.badRequest(field + " must not be empty", field);
        }
        return PromptInput.text(node.asText());
    }

    private static int[] ids(JsonNode array, String field) {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode id = array.get(i);
            if (!id.isIntegralNumber() || !id.canConvertToInt() || id.asInt() < 0) {
                throw ApiException.badRequest(field + "[" + i + "] must be a token id (an integer >= 0), got "
                        + abbreviate(id), field);
            }
            ids[i] = id.asInt();
        }
        return ids;
    }

    private static List<String> stop(JsonNode stop) {
        if (stop == null || stop.isNull()) {
            return List.of();
        }
        if (stop.isTextual()) {
            return List.of(stop.asText());
        }
        if (!stop.isArray()) {
            throw ApiException.badRequest("stop must be a string or an array of strings, got " + abbreviate(stop),
                    "stop");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode s : stop) {
            if (!s.isTextual()) {
                throw ApiException.badRequest("stop must hold strings, got " + abbreviate(s), "stop");
            }
            out.add(s.asText());
        }
        return out;
    }

    private static int integer(JsonNode root, String field, int fallback) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return fallback;
        }
        if (!node.isIntegralNumber() || !node.canConvertToInt()) {
            throw ApiException.badRequest(field + " must be an integer, got " + abbreviate(node), field);
        }
        return node.asInt();
    }

    private static long longInteger(JsonNode node, String field) {
        if (!node.isIntegralNumber() || !node.canConvertToLong()) {
            throw ApiException.badRequest(field + " must be an integer, got " + abbreviate(node), field);
        }
        return node.asLong();
    }

    private static double number(JsonNode root, String field, double fallback) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return fallback;
        }
        if (!node.isNumber()) {
            throw ApiException.badRequest(field + " must be a number, got " + abbreviate(node), field);
        }
        return node.asDouble();
    }

    private static boolean bool(JsonNode root, String field, boolean fallback) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return fallback;
        }
        if (!node.isBoolean()) {
            throw ApiException.badRequest(field + " must be true or false, got " + abbreviate(node), field);
        }
        return node.asBoolean();
    }

    /** The field an error message starts with ({@code max_tokens must …}, {@code prompt: …}), or null. */
    static String fieldOf(String message) {
        return InferenceActor.fieldOf(message);
    }

    private static String abbreviate(JsonNode node) {
        String text = node.toString();
        return text.length() <= 60 ? text : text.substring(0, 60) + "…";
    }
}
