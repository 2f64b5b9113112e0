package io.kdapack.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.inference.Generation;
import io.kdapack.inference.InferenceEngine;
import io.kdapack.inference.SamplingParams;
import io.kdapack.inference.ServedModel;
import io.kdapack.tokenizers.Tokenizers;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kdapack generate}: the command-line twin of {@code POST /v1/completions}. Loads a run's checkpoint, runs the
 * prompts through the inference engine (packed prefill, batched decode) and writes one JSON line per prompt:
 * {@code {"prompt_ids": [...], "ids": [...], "logprobs": [...], "text": "..."}}, where {@code logprobs[i]} is the
 * natural log of the probability of {@code ids[i]} under the model's full softmax at temperature 1.
 */
@Command(name = "generate", mixinStandardHelpOptions = true,
        description = "Generate from a trained run's checkpoint: one JSON line per prompt with the prompt ids, the "
                + "generated ids, their log-probabilities at temperature 1 and the text (docs/inference.md).")
final class GenerateCommand implements Callable<Integer> {
    /** Largest {@code --prompt-ids} file read. */
    static final long MAX_PROMPT_FILE_BYTES = 256L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Spec
    CommandSpec spec;

    @Option(names = "--run", required = true, paramLabel = "RUN_DIR",
            description = "a kdapack train run directory (config.json, checkpoints/) or a server job directory")
    Path run;

    @Option(names = "--step", paramLabel = "N", description = "the checkpoint step (default: the newest)")
    Long step;

    @ArgGroup(exclusive = true, multiplicity = "1")
    PromptSource prompts;

    static final class PromptSource {
        @Option(names = "--prompt", paramLabel = "TEXT", description = "one prompt, through the model's tokenizer")
        String text;

        @Option(names = "--prompt-ids", paramLabel = "FILE.jsonl", description = "one {\"ids\": [...]} per line")
        Path idsFile;
    }

    @Option(names = "--max-tokens", required = true, paramLabel = "N", description = "tokens to generate per prompt")
    int maxTokens;

    @Option(names = "--temperature", paramLabel = "T", description = "0 (default): greedy; > 0: sampling")
    double temperature = 0;

    @Option(names = "--top-p", paramLabel = "P", description = "nucleus in (0, 1] (default 1)")
    double topP = 1;

    @Option(names = "--top-k", paramLabel = "K", description = "keep the K most likely tokens; 0 (default): all")
    int topK = 0;

    @Option(names = "--seed", paramLabel = "S", description = "prompt i samples with seed S + i (default S = 0)")
    long seed = 0;

    @Option(names = "--out", paramLabel = "OUT.jsonl", description = "output file, written atomically (default: stdout)")
    Path out;

    @Option(names = "--threads", paramLabel = "N", description = "KDA worker threads (default: all processors)")
    int threads = 0;

    @Option(names = "--max-sequences", paramLabel = "N", description = "prompts generating at once (default 64)")
    int maxSequences = 64;

    @Option(names = "--prefill-chunk", paramLabel = "N",
            description = "prompt tokens per sequence and prefill call (default 512)")
    int prefillChunk = 512;

    @Option(names = "--max-context", paramLabel = "N",
            description = "prompt plus generated tokens per sequence at most (default 32768)")
    int maxContext = 32768;

    @Override
    public Integer call() throws IOException {
        if (threads < 0) {
            throw new IllegalArgumentException("--threads must be >= 0 (0: all processors), got " + threads);
        }
        ServedModel served = ServedModel.load(run, step, threads);
        InferenceEngine engine = new InferenceEngine(served.model(), Tokenizers.forModel(served.config().model()),
                threads > 0 ? threads : Runtime.getRuntime().availableProcessors(), prefillChunk, maxContext);
        List<int[]> promptIds = prompts.text != null ? List.of(engine.tokenizer().encode(prompts.text))
                : readPromptIds(prompts.idsFile);
        List<Generation> generations = new ArrayList<>();
        for (int i = 0; i < promptIds.size(); i++) {
            SamplingParams params = new SamplingParams(maxTokens, temperature, topK, topP, seed + i, List.of());
            try {
                generations.add(engine.start(promptIds.get(i), params));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException((prompts.text != null ? "--prompt: " : prompts.idsFile + " line "
                        + (i + 1) + ": ") + e.getMessage(), e);
            }
        }
        engine.runToEnd(generations, maxSequences);

        StringBuilder lines = new StringBuilder();
        for (Generation g : generations) {
            lines.append(line(g)).append('\n');
        }
        if (out == null) {
            PrintWriter stdout = spec.commandLine().getOut();
            stdout.print(lines);
            stdout.flush();
        } else {
            SafeTensors.writeAtomically(out, lines.toString().getBytes(StandardCharsets.UTF_8));
        }
        return 0;
    }

    private static String line(Generation g) throws IOException {
        ObjectNode line = JSON.createObjectNode();
        ArrayNode prompt = line.putArray("prompt_ids");
        for (int id : g.prompt()) {
            prompt.add(id);
        }
        ArrayNode ids = line.putArray("ids");
        for (int id : g.tokens()) {
            ids.add(id);
        }
        ArrayNode logprobs = line.putArray("logprobs");
        for (double lp : g.logprobs()) {
            logprobs.add(lp);
        }
        line.put("text", g.text());
        return JSON.writeValueAsString(line);
    }

    /** One {@code {"ids": [...]}} per non-blank line; errors name the file and line. */
    static List<int[]> readPromptIds(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("--prompt-ids: no such file: " + file);
        }
        if (Files.size(file) > MAX_PROMPT_FILE_BYTES) {
            throw new IllegalArgumentException("--prompt-ids: " + file + " has " + Files.size(file)
                    + " bytes, at most " + MAX_PROMPT_FILE_BYTES + " are read");
        }
        List<int[]> prompts = new ArrayList<>();
        try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String text;
            int number = 0;
            while ((text = reader.readLine()) != null) {
                number++;
                if (text.isBlank()) {
                    continue;
                }
                String where = "--prompt-ids " + file + " line " + number + ": ";
                JsonNode node;
                try {
                    node = JSON.readTree(text);
                } catch (JsonProcessingException e) {
                    throw new IllegalArgumentException(where + "not JSON (" + e.getOriginalMessage() + ")");
                }
                JsonNode ids = node.path("ids");
                if (!ids.isArray()) {
                    throw new IllegalArgumentException(where + "expected {\"ids\": [...]}, got " + abbreviate(text));
                }
                int[] prompt = new int[ids.size()];
                for (int i = 0; i < prompt.length; i++) {
                    JsonNode id = ids.get(i);
                    if (!id.canConvertToInt() || !id.isIntegralNumber()) {
                        throw new IllegalArgumentException(where + "ids[" + i + "] must be an integer, got " + id);
                    }
                    prompt[i] = id.intValue();
                }
                prompts.add(prompt);
            }
        }
        if (prompts.isEmpty()) {
            throw new IllegalArgumentException("--prompt-ids: " + file + " holds no prompt");
        }
        return prompts;
    }

    private static String abbreviate(String text) {
        return text.length() <= 80 ? text : text.substring(0, 80) + "…";
    }
}
