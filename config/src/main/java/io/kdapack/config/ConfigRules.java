package io.kdapack.config;

import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.optim.OptimizerConfig;
import java.util.List;
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
    /** Largest valid split (samples) an evaluation schedule may ask for: Megatron's sample index is int32. */
    static final long MAX_VALID_SAMPLES = Integer.MAX_VALUE / 2 - 1;

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
            Map.entry("train.eval_interval", new Rule(v -> (int) v >= 0, "expected an integer >= 0 (0 = no validation)")),
            Map.entry("train.eval_iters", atLeast(1)),
            Map.entry("train.data_parallel", atLeast(1)),
            Map.entry("model.tokenizer", new Rule(v -> !((String) v).isBlank(),
                    "expected null (the byte tokenizer) or the path of a Hugging Face tokenizer.json")),
            Map.entry("train.data.pad_id", new Rule(v -> (int) v >= -1, "expected -1 (no padding token) or a token id >= 0")),
            Map.entry("train.checkpoint.dir", nonBlank()),
            Map.entry("train.checkpoint.interval", new Rule(v -> (int) v >= 0, "expected an integer >= 0 (0 = only at the end)")),
            Map.entry("train.checkpoint.keep_last", new Rule(v -> (int) v >= 0,
                    "expected an integer >= 0 (the newest checkpoints kept; 0 = keep every checkpoint)")),
            Map.entry("server.host", nonBlank()),
            Map.entry("server.port", new Rule(v -> (int) v >= 0 && (int) v <= 65535, "expected a port in [0, 65535] (0 = ephemeral)")),
            Map.entry("server.token", new Rule(v -> TOKEN.matcher((String) v).matches(),
                    "expected null (generate one) or a non-empty token without whitespace")),
            Map.entry("server.token_file", nonBlank()),
            Map.entry("server.max_body_bytes", new Rule(v -> (long) v >= 1, "expected an integer >= 1")),
            Map.entry("server.data_root", nonBlank()),
            Map.entry("server.event_batch_ms", new Rule(v -> (long) v >= 0 && (long) v <= 3_600_000,
                    "expected an integer in [0, 3600000] (0 = each event at once; at most an hour)")),
            Map.entry("server.memory_budget", new Rule(v -> (long) v >= 0,
                    "expected an integer >= 0 (bytes; 0 = 60 % of the maximum heap)")),
            Map.entry("server.max_running_jobs", atLeast(1)),
            Map.entry("server.max_queued_jobs", atLeast(0)),
            Map.entry("server.max_connections", atLeast(1)),
            Map.entry("server.max_connections_per_address", atLeast(1)),
            Map.entry("server.idle_timeout_ms", new Rule(v -> (long) v >= 100 && (long) v <= 86_400_000,
                    "expected an integer in [100, 86400000] (milliseconds)")),
            Map.entry("server.request_timeout_ms", new Rule(v -> (long) v >= 100 && (long) v <= 86_400_000,
                    "expected an integer in [100, 86400000] (milliseconds)")),
            Map.entry("server.max_step_tokens", atLeast(1)),
            Map.entry("server.inference.max_sequences", atLeast(1)),
            Map.entry("server.inference.max_queued_requests", atLeast(0)),
            Map.entry("server.inference.state_budget_bytes", atLeast(1)),
            Map.entry("server.inference.max_context", atLeast(2)),
            Map.entry("server.inference.max_tokens", atLeast(1)),
            Map.entry("server.inference.max_prompts", atLeast(1)),
            Map.entry("server.inference.prefill_chunk", atLeast(1)),
            Map.entry("server.inference.max_models", atLeast(1)),
            Map.entry("server.inference.retry_after_seconds", new Rule(v -> (int) v >= 1 && (int) v <= 3600,
                    "expected an integer in [1, 3600] (seconds)")),
            Map.entry("server.inference.threads", new Rule(v -> (int) v >= 0,
                    "expected an integer >= 0 (0 = all processors)")),
            Map.entry("cluster.host", nonBlank()),
            Map.entry("cluster.port", new Rule(v -> (int) v >= 0 && (int) v <= 65535,
                    "expected a port in [0, 65535] (0 = ephemeral, for a node that is no one's seed)")),
            Map.entry("cluster.stable_after_ms", new Rule(v -> (long) v >= 100 && (long) v <= 3_600_000,
                    "expected an integer in [100, 3600000] (milliseconds)")),
            Map.entry("cluster.failure_timeout_ms", new Rule(v -> (long) v >= 100 && (long) v <= 3_600_000,
                    "expected an integer in [100, 3600000] (milliseconds)")),
            Map.entry("cluster.join_timeout_ms", new Rule(v -> (long) v >= 100 && (long) v <= 3_600_000,
                    "expected an integer in [100, 3600000] (milliseconds)")));

    /** A seed node: a host name or IPv4 address, a colon, a port. */
    private static final Pattern SEED = Pattern.compile("[A-Za-z0-9._-]+:([0-9]{1,5})");

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
        checkCluster(c.cluster(), sourceOf);
        if (uses == Uses.ALL || uses == Uses.MODEL) {
            checkModelRelations(c.model(), sourceOf);
        }
        if (uses == Uses.ALL) {
            checkTrainRelations(c, sourceOf);
        }
    }

    /** The list keys of the cluster section, entry by entry (their own rules, checked whatever the command). */
    private static void checkCluster(ClusterConfig cluster, java.util.function.Function<String, String> sourceOf) {
        List<String> seeds = cluster.seedNodes();
        for (int i = 0; i < seeds.size(); i++) {
            var m = SEED.matcher(seeds.get(i));
            if (!m.matches() || Integer.parseInt(m.group(1)) < 1 || Integer.parseInt(m.group(1)) > 65535) {
                throw new ConfigException("cluster.seed_nodes[" + i + "]", seeds.get(i),
                        "expected host:port with a port in [1, 65535] (e.g. 127.0.0.1:2552)",
                        sourceOf.apply("cluster.seed_nodes"));
            }
        }
        List<String> roles = cluster.roles();
        if (roles.isEmpty() || roles.stream().anyMatch(r -> !r.equals(ClusterConfig.ROLE_API)
                && !r.equals(ClusterConfig.ROLE_WORKER)) || roles.stream().distinct().count() != roles.size()) {
            throw new ConfigException("cluster.roles", String.join(",", roles),
                    "expected [api], [worker] or [api, worker]: api serves HTTP, worker runs jobs",
                    sourceOf.apply("cluster.roles"));
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
        if (c.train().numMicrobatches() % c.train().dataParallel() != 0) {
            throw new ConfigException("train.data_parallel", c.train().dataParallel(), "expected a divisor of "
                    + "train.num_microbatches (" + c.train().numMicrobatches() + "): each of the N ranks runs a contiguous "
                    + "block of num_microbatches / N micro-batches", sourceOf.apply("train.data_parallel"));
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
        if (d.blend() != null) {
            checkBlend(d, sourceOf.apply("train.data.blend"));
        }
        if (c.train().validates() && !(splitPart(d.split(), 1) > 0)) {
            throw new ConfigException("train.eval_interval", c.train().evalInterval(), "expected 0: train.data.split '"
                    + d.split() + "' has no valid part to evaluate on (give it a second weight > 0, e.g. 969,30,1)",
                    sourceOf.apply("train.eval_interval"));
        }
        if (c.train().validates()) {
            TrainConfig t = c.train();
            long samples;
            try {
                samples = t.validSamples();
            } catch (ArithmeticException e) {
                samples = Long.MAX_VALUE;
            }
            if (samples > MAX_VALID_SAMPLES) {
                throw new ConfigException("train.eval_iters", t.evalIters(), "the valid split would need (steps div "
                        + "eval_interval + 1) · eval_iters · global batch = " + (samples == Long.MAX_VALUE ? "more than "
                        + Long.MAX_VALUE : samples) + " samples, more than the " + MAX_VALID_SAMPLES
                        + " an int32 sample index holds: lower train.eval_iters or raise train.eval_interval",
                        sourceOf.apply("train.eval_iters"));
            }
        }
    }

    /**
     * A blend replaces {@code prefix}; it holds at least one corpus, each with a positive finite weight and a
     * non-empty prefix, and no corpus twice (the same path after normalisation).
     */
    private static void checkBlend(DataConfig d, String source) {
        List<BlendEntry> blend = d.blend();
        if (d.prefix() != null) {
            throw new ConfigException("train.data.blend", render(blend), "expected null when train.data.prefix is set ('"
                    + d.prefix() + "'): give the corpora either as one prefix or as a blend", source);
        }
        if (blend.isEmpty()) {
            throw new ConfigException("train.data.blend", "[]", "expected null or at least one {weight, prefix}", source);
        }
        Map<java.nio.file.Path, Integer> seen = new java.util.HashMap<>();
        for (int i = 0; i < blend.size(); i++) {
            BlendEntry e = blend.get(i);
            if (!(e.weight() > 0) || !Double.isFinite(e.weight())) {
                throw new ConfigException("train.data.blend[" + i + "].weight", e.weight(), "expected a positive finite "
                        + "number (Megatron's weights are shares; leave a corpus out instead of weighting it 0)", source);
            }
            if (e.prefix() == null || e.prefix().isBlank()) {
                throw new ConfigException("train.data.blend[" + i + "].prefix", e.prefix(), "expected a non-empty path "
                        + "prefix", source);
            }
            Integer first = seen.putIfAbsent(java.nio.file.Path.of(e.prefix()).toAbsolutePath().normalize(), i);
            if (first != null) {
                throw new ConfigException("train.data.blend[" + i + "].prefix", e.prefix(), "the same corpus as "
                        + "train.data.blend[" + first + "].prefix: list each corpus once (add the weights)", source);
            }
        }
    }

    private static String render(List<BlendEntry> blend) {
        StringBuilder b = new StringBuilder();
        for (BlendEntry e : blend) {
            b.append(b.isEmpty() ? "" : " ").append(e.weight()).append(' ').append(e.prefix());
        }
        return b.toString();
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

    /** Weight {@code part} (0 train, 1 valid, 2 test) of a split string that passed its rule; 0 when absent. */
    private static double splitPart(String split, int part) {
        String[] parts = split.trim().split("\\s*[,/]\\s*");
        return part < parts.length ? Double.parseDouble(parts[part]) : 0;
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
