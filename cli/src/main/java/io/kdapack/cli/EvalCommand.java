package io.kdapack.cli;

import io.kdapack.config.ConfigLoader;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.training.ModelEval;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code kdapack eval}: losses and every weight gradient of a model on one batch, as tensors. */
@Command(name = "eval", mixinStandardHelpOptions = true,
        description = "Forward and backward pass of the model on one batch: per-token losses, loss, count, MTP loss "
                + "and grad.<weight name> for every weight (docs/model.md).")
final class EvalCommand implements Callable<Integer> {

    @Option(names = "--config", required = true, paramLabel = "C", description = "configuration YAML (its model section)")
    Path config;

    @Option(names = "--weights", required = true, paramLabel = "W", description = "model weights .safetensors")
    Path weights;

    @Option(names = "--batch", required = true, paramLabel = "B",
            description = ".safetensors with tokens, labels, loss_mask, position_ids, segment_ids [B,L]")
    Path batch;

    @Option(names = "--out", required = true, paramLabel = "O", description = "output .safetensors, written atomically")
    Path out;

    @Option(names = "--no-isolation", description = "run KDA and the short convolutions over whole rows "
            + "(no reset at document boundaries)")
    boolean noIsolation;

    @Mixin
    ThreadsOption threads;

    @Override
    public Integer call() throws IOException {
        ModelConfig model = ConfigLoader.loadModel(config);
        SafeTensors weightTensors = read("--weights", weights);
        SafeTensors batchTensors = read("--batch", batch);
        HybridModel hybrid = new HybridModel(model, new KdaChunked(threads.count()), !noIsolation);
        hybrid.load(weightTensors);
        ModelEval.evaluate(hybrid, batchTensors).write(out);
        return 0;
    }

    private static SafeTensors read(String option, Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(option + ": no such file: " + file);
        }
        return SafeTensors.read(file);
    }
}
