package io.kdapack.training;

import io.kdapack.config.BlendEntry;
import io.kdapack.config.DataConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * The corpora a run reads, resolved to paths: one {@code .bin/.idx} prefix (Megatron's {@code --data-path P}), or a
 * weighted blend of several ({@code --data-path W1 P1 W2 P2 …}, {@code train.data.blend}). A blend of one corpus is
 * that corpus alone: its samples are those of {@code train.data.prefix} (Megatron's single-prefix path).
 *
 * @param prefixes {@code [C]} the corpora, in blend order
 * @param weights  {@code [C]} their weights as configured (not normalised), or {@code null} for one prefix
 */
public record TrainingCorpora(List<Path> prefixes, double[] weights) {

    public TrainingCorpora {
        prefixes = List.copyOf(prefixes);
        if (prefixes.isEmpty() || weights != null && weights.length != prefixes.size()) {
            throw new IllegalArgumentException(prefixes.size() + " prefixes with "
                    + (weights == null ? "no" : String.valueOf(weights.length)) + " weights");
        }
        if (weights == null && prefixes.size() != 1) {
            throw new IllegalArgumentException("a blend of " + prefixes.size() + " corpora needs weights");
        }
        weights = weights == null ? null : weights.clone();
    }

    /** One corpus. */
    public static TrainingCorpora single(Path prefix) {
        return new TrainingCorpora(List.of(prefix), null);
    }

    /**
     * The corpora {@code data} names: {@code train.data.blend} when set (a blend of one entry becomes that prefix alone),
     * else {@code train.data.prefix}.
     *
     * @param resolve turns a configured path and the key it came from (e.g. {@code train.data.blend[1].prefix}) into
     *                a path; {@code null} for {@code train.data.prefix} means the demo dataset
     */
    public static TrainingCorpora of(DataConfig data, BiFunction<String, String, Path> resolve) {
        List<BlendEntry> blend = data.blend();
        if (blend == null) {
            return single(resolve.apply(data.prefix(), "train.data.prefix"));
        }
        if (blend.size() == 1) {
            return single(resolve.apply(blend.get(0).prefix(), "train.data.blend[0].prefix"));
        }
        List<Path> prefixes = new ArrayList<>();
        double[] weights = new double[blend.size()];
        for (int i = 0; i < blend.size(); i++) {
            prefixes.add(resolve.apply(blend.get(i).prefix(), "train.data.blend[" + i + "].prefix"));
            weights[i] = blend.get(i).weight();
        }
        return new TrainingCorpora(prefixes, weights);
    }

    /** The corpora of {@code data} on the command line: {@link DatasetPaths#trainPrefix} for each path. */
    public static TrainingCorpora of(DataConfig data) {
        return of(data, (path, key) -> DatasetPaths.trainPrefix(path));
    }

    /** The weights as configured, a copy; {@code null} for one prefix. */
    @Override
    public double[] weights() {
        return weights == null ? null : weights.clone();
    }

    /** Whether this is a blend of several corpora. */
    public boolean blended() {
        return weights != null;
    }

    /** {@code "P"} for one prefix, {@code "W1 P1 W2 P2 …"} for a blend (Megatron's {@code --data-path} form). */
    @Override
    public String toString() {
        if (!blended()) {
            return prefixes.get(0).toString();
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < prefixes.size(); i++) {
            b.append(i == 0 ? "" : " ").append(weights[i]).append(' ').append(prefixes.get(i));
        }
        return b.toString();
    }
}
