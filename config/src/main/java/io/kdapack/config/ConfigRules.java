package io.kdapack.config;

import java.util.Map;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/** The allowed values of each key beyond its type, and the checks that relate several keys. */
final class ConfigRules {

    /** A constraint on one value, with the text shown when it fails. */
    record Rule(Predicate<Object> test, String allowed) {
    }

    private static final Pattern SPLIT = Pattern.compile("\\s*[0-9.]+(\\s*[,/]\\s*[0-9.]+){0,2}\\s*");
    private static final Pattern TOKEN = Pattern.compile("\\S+");

    static final Map<String, Rule> RULES = Map.ofEntries(
            Map.entry("model.vocab_size", atLeast(1)),
            Map.entry("model.hidden_size", atLeast(1)),
            Map.entry("model.num_layers", atLeast(1)),
            Map.entry("model.full_attention_interval", atLeast(1)),
            Map.entry("model.intermediate_size", atLeast(1)),
            Map.entry("model.rms_norm_eps", openInterval(0, 1)),
            Map.entry("model.kda.num_heads", atLeast(1)),
            Map.entry("model.kda.num_v_heads", atLeast(1)),
            Map.entry("model.kda.head_dim", atLeast(1)),
            Map.entry("model.kda.conv_size", atLeast(1)),
            Map.entry("model.kda.lower_bound", new Rule(v -> (double) v >= -5 && (double) v < 0,
                    "expected null (softplus gate) or a number in [-5, 0)")),
            Map.entry("model.kda.norm_eps", openInterval(0, 1)),
            Map.entry("model.mla.num_heads", atLeast(1)),
            Map.entry("model.mla.q_lora_rank", new Rule(v -> (int) v >= 1, "expected null (no query compression) or an integer >= 1")),
            Map.entry("model.mla.kv_lora_rank", atLeast(1)),
            Map.entry("model.mla.qk_nope_head_dim", atLeast(1)),
            Map.entry("model.mla.qk_rope_head_dim", new Rule(v -> (int) v >= 2 && (int) v % 2 == 0,
                    "expected an even integer >= 2 (RoPE rotates pairs)")),
            Map.entry("model.mla.v_head_dim", atLeast(1)),
            Map.entry("model.mla.rope_theta", positive()),
            Map.entry("model.mtp.depth", new Rule(v -> (int) v == 0 || (int) v == 1, "expected 0 (off) or 1")),
            Map.entry("model.mtp.loss_factor", nonNegative()),
            Map.entry("train.seed", new Rule(v -> (long) v >= 0 && (long) v <= 0xFFFF_FFFFL,
                    "expected an integer in [0, 4294967295] (numpy RandomState seeds are 32-bit)")),
            Map.entry("train.steps", atLeast(1)),
            Map.entry("train.micro_batch_size", atLeast(1)),
            Map.entry("train.num_microbatches", atLeast(1)),
            Map.entry("train.seq_length", atLeast(1)),
            Map.entry("train.threads", new Rule(v -> (int) v >= 0, "expected an integer >= 0 (0 = all processors)")),
            Map.entry("train.optimizer.lr", positive()),
            Map.entry("train.optimizer.min_lr", nonNegative()),
            Map.entry("train.optimizer.warmup_steps", atLeast(0)),
            Map.entry("train.optimizer.weight_decay", nonNegative()),
            Map.entry("train.optimizer.beta1", halfOpen(0, 1)),
            Map.entry("train.optimizer.beta2", halfOpen(0, 1)),
            Map.entry("train.optimizer.eps", positive()),
            Map.entry("train.optimizer.clip_grad", new Rule(v -> (double) v >= 0, "expected a number >= 0 (0 = no clipping)")),
            Map.entry("train.data.prefix", new Rule(v -> !((String) v).isBlank(),
                    "expected null (the shipped demo dataset) or a non-empty path prefix")),
            Map.entry("train.data.split", new Rule(v -> SPLIT.matcher((String) v).matches() && splitSum((String) v) > 0,
                    "expected 1 to 3 non-negative weights separated by ',' or '/', not all zero (e.g. 969,30,1)")),
            Map.entry("train.data.eod_id", atLeast(0)),
            Map.entry("train.data.pad_id", new Rule(v -> (int) v >= -1, "expected -1 (no padding token) or a token id >= 0")),
            Map.entry("train.checkpoint.dir", nonBlank()),
            Map.entry("train.checkpoint.interval", new Rule(v -> (int) v >= 0, "expected an integer >= 0 (0 = only at the end)")),
            Map.entry("server.host", nonBlank()),
            Map.entry("server.port", new Rule(v -> (int) v >= 0 && (int) v <= 65535, "expected a port in [0, 65535] (0 = ephemeral)")),
            Map.entry("server.token", new Rule(v -> TOKEN.matcher((String) v).matches(),
                    "expected null (generate one) or a non-empty token without whitespace")),
            Map.entry("server.token_file", nonBlank()),
            Map.entry("server.max_body_bytes", new Rule(v -> (long) v >= 1, "expected an integer >= 1")),
            Map.entry("server.data_root", nonBlank()),
            Map.entry("server.event_batch_ms", new Rule(v -> (long) v >= 0 && (long) v <= 3_600_000,
                    "expected an integer in [0, 3600000] (0 = each event at once; at most an hour)")));

    private ConfigRules() {
    }

    /**
     * The sections a command reads, whose relations it checks; every key's own rule ({@link #RULES}) is checked
     * whatever the command, because a document with an invalid value is invalid wherever it is used.
     */
    enum Uses {
        /** Everything: {@code kdapack train} and training jobs (the train section refers to the model's vocabulary). */
        ALL,
        /** The model section alone: commands that read no dataset ({@code kdapack eval}, {@code bench model}). */
        MODEL,
        /** The server section alone ({@code kdapack serve}: jobs bring their own configuration). */
        SERVER
    }

    /**
     * Checks that relate keys to each other, for the sections in use; values of keys the user did not set come from
     * the defaults.
     *
     * @param sourceOf where the value of a key came from, for the message
     */
    static void checkRelations(KdapackConfig c, Uses uses, java.util.function.Function<String, String> sourceOf) {
        if (uses == Uses.ALL || uses == Uses.MODEL) {
            checkModelRelations(c.model(), sourceOf);
        }
        if (uses == Uses.ALL) {
            checkTrainRelations(c, sourceOf);
        }
    }

    private static void checkModelRelations(ModelConfig model, java.util.function.Function<String, String> sourceOf) {
        KdaConfig kda = model.kda();
        if (kda.numVHeads() % kda.numHeads() != 0) {
            throw new ConfigException("model.kda.num_v_heads", kda.numVHeads(),
                    "expected a multiple of model.kda.num_heads (" + kda.numHeads() + ")", sourceOf.apply("model.kda.num_v_heads"));
        }
    }

    private static void checkTrainRelations(KdapackConfig c, java.util.function.Function<String, String> sourceOf) {
        OptimizerConfig o = c.train().optimizer();
        if (o.minLr() > o.lr()) {
            throw new ConfigException("train.optimizer.min_lr", o.minLr(),
                    "expected a number <= train.optimizer.lr (" + o.lr() + ")", sourceOf.apply("train.optimizer.min_lr"));
        }
        if (o.warmupSteps() >= c.train().steps()) {
            throw new ConfigException("train.optimizer.warmup_steps", o.warmupSteps(),
                    "expected an integer < train.steps (" + c.train().steps() + "): the cosine decay needs at least one step",
                    sourceOf.apply("train.optimizer.warmup_steps"));
        }
        DataConfig d = c.train().data();
        int vocab = c.model().vocabSize();
        if (d.eodId() >= vocab) {
            throw new ConfigException("train.data.eod_id", d.eodId(), "expected a token id < model.vocab_size (" + vocab + ")",
                    sourceOf.apply("train.data.eod_id"));
        }
        if (d.padId() >= vocab || d.padId() == d.eodId()) {
            throw new ConfigException("train.data.pad_id", d.padId(), "expected -1 or a token id < model.vocab_size (" + vocab
                    + ") other than train.data.eod_id (" + d.eodId() + ")", sourceOf.apply("train.data.pad_id"));
        }
    }

    private static Rule atLeast(long min) {
        return new Rule(v -> ((Number) v).longValue() >= min, "expected an integer >= " + min);
    }

    private static Rule positive() {
        return new Rule(v -> (double) v > 0, "expected a number > 0");
    }

    private static Rule nonNegative() {
        return new Rule(v -> (double) v >= 0, "expected a number >= 0");
    }

    private static Rule openInterval(double lo, double hi) {
        return new Rule(v -> (double) v > lo && (double) v < hi, "expected a number in (" + lo + ", " + hi + ")");
    }

    private static Rule halfOpen(double lo, double hi) {
        return new Rule(v -> (double) v >= lo && (double) v < hi, "expected a number in [" + lo + ", " + hi + ")");
    }

    private static Rule nonBlank() {
        return new Rule(v -> !((String) v).isBlank(), "expected a non-empty string");
    }

    private static double splitSum(String split) {
        double sum = 0;
        for (String part : split.trim().split("\\s*[,/]\\s*")) {
            try {
                sum += Double.parseDouble(part);
            } catch (NumberFormatException e) {
                return 0;
            }
        }
        return sum;
    }
}
