package io.kdapack.inference;

import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.model.MtpConfig;
import io.kdapack.core.nn.Parameter;
import io.kdapack.data.tokenizer.ByteTokenizer;
import java.util.Random;

/** A tiny hybrid model over the byte vocabulary (KDA then MLA), with weights large enough to give varied outputs. */
public final class TinyServing {
    public static final int VOCAB = ByteTokenizer.VOCAB_SIZE;

    private TinyServing() {
    }

    public static ModelConfig config() {
        return new ModelConfig(VOCAB, 16, 2, 2, 24, 1e-6, false, new KdaConfig(1, 2, 8, 4, null, 1e-5),
                new MlaConfig(2, 8, 8, 4, 4, 4, 10000.0), new MtpConfig(0, 0.1), null);
    }

    public static HybridModel model(long seed) {
        HybridModel model = new HybridModel(config(), new KdaChunked(2), true);
        model.initialize(seed);
        Random random = new Random(seed);
        for (Parameter p : model.parameters()) {
            if (!p.name().endsWith("A_log") && !p.name().contains("conv1d") && !p.name().endsWith("norm.weight")) {
                p.initNormal(random, p.name().contains("embed_tokens") ? 1.0 : 0.35);
            }
        }
        return model;
    }

    public static InferenceEngine engine(long seed, int prefillChunk) {
        return new InferenceEngine(model(seed), new ByteTokenizer(), 2, prefillChunk, 512);
    }

    public static int[] randomPrompt(Random random, int length) {
        int[] prompt = new int[length];
        for (int i = 0; i < length; i++) {
            prompt[i] = random.nextInt(256);
        }
        return prompt;
    }
}
