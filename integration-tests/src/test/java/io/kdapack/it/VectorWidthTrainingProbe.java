package io.kdapack.it;

import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.core.linalg.VectorWidth;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.nn.Parameter;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.HybridModels;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;

/**
 * A short training of the default model (3 KDA layers with their short convolutions, one MLA layer, MTP) on the
 * shipped dataset: {@value #STEPS} steps of 2 micro-batches of 2 samples of 128 tokens, on 2 threads. Prints
 * {@code lanes N}, then one {@code digest NAME HEX} line per step for its loss, MTP loss and gradient norm (the bits
 * of the double), and SHA-256 digests of the weights after the steps and of the per-token losses of one evaluation,
 * for {@link VectorWidthTrainingTest} to compare across vector widths. The repository root comes from the system
 * property {@code kdapack.home}.
 */
public final class VectorWidthTrainingProbe {
    static final int STEPS = 3;

    private VectorWidthTrainingProbe() {
    }

    public static void main(String[] args) throws Exception {
        Properties overrides = new Properties();
        overrides.setProperty("kdapack.train.steps", Integer.toString(STEPS));
        overrides.setProperty("kdapack.train.micro_batch_size", "2");
        overrides.setProperty("kdapack.train.threads", "2");
        overrides.setProperty("kdapack.train.optimizer.warmup_steps", "0");
        overrides.setProperty("kdapack.train.checkpoint.interval", "0");
        KdapackConfig config = ConfigLoader.load(null, Map.of(), overrides);
        Path checkpoints = Files.createTempDirectory("kdapack-width-probe");
        System.out.println("lanes " + VectorWidth.LANES);
        try (Trainer trainer = Trainer.create(config, HybridModels.FACTORY, DatasetPaths.trainPrefix(null), checkpoints)) {
            while (!trainer.finished()) {
                StepResult step = trainer.step();
                String prefix = "step." + step.step() + ".";
                print(prefix + "loss", step.loss());
                print(prefix + "mtp_loss", step.mtpLoss());
                print(prefix + "grad_norm", step.gradNorm());
            }
            MessageDigest weights = MessageDigest.getInstance("SHA-256");
            for (Parameter p : trainer.model().parameters()) {
                ByteBuffer bits = ByteBuffer.allocate(4 * p.values().length);
                for (float v : p.values()) {
                    bits.putInt(Float.floatToRawIntBits(v));
                }
                weights.update(bits.array());
            }
            System.out.println("digest weights " + HexFormat.of().formatHex(weights.digest()));
            LanguageModel.Output eval = trainer.evaluate(trainer.microBatches(1).get(0));
            MessageDigest losses = MessageDigest.getInstance("SHA-256");
            ByteBuffer bits = ByteBuffer.allocate(8 * (eval.perTokenLoss().length + eval.mtpPerTokenLoss().length));
            for (double v : eval.perTokenLoss()) {
                bits.putLong(Double.doubleToRawLongBits(v));
            }
            for (double v : eval.mtpPerTokenLoss()) {
                bits.putLong(Double.doubleToRawLongBits(v));
            }
            System.out.println("digest eval.per_token_loss " + HexFormat.of().formatHex(losses.digest(bits.array())));
        } finally {
            Files.deleteIfExists(checkpoints);
        }
    }

    private static void print(String name, double value) {
        System.out.println("digest " + name + " " + Long.toHexString(Double.doubleToRawLongBits(value)));
    }
}
