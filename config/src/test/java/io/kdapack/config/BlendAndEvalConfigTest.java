package io.kdapack.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** {@code train.data.blend}, {@code train.eval_interval}/{@code eval_iters} and {@code model.tokenizer}. */
class BlendAndEvalConfigTest {

    @Test
    void blendBindsFromYamlListsAndFromMegatronText() {
        KdapackConfig c = ConfigLoader.fromYaml("""
                train:
                  data:
                    blend:
                      - {weight: 0.7, prefix: data/a}
                      - {weight: 3, prefix: data/b}
                """);
        assertEquals(List.of(new BlendEntry(0.7, "data/a"), new BlendEntry(3, "data/b")), c.train().data().blend());
        KdapackConfig fromEnv = ConfigLoader.load(null, Map.of("KDAPACK_TRAIN_DATA_BLEND", "0.7 data/a 3 data/b"),
                new Properties());
        assertEquals(c.train().data().blend(), fromEnv.train().data().blend());
        assertEquals(c.fingerprint(), fromEnv.fingerprint());
        assertNull(KdapackConfig.defaults().train().data().blend());
        assertTrue(c.toMap().toString().contains("blend=[{weight=0.7, prefix=data/a}, {weight=3.0, prefix=data/b}]"),
                c.toMap().toString());
    }

    @Test
    void badBlendsAreErrorsNamingTheEntry() {
        expect("train:\n  data:\n    blend:\n      - {weight: 0, prefix: a}\n", "train.data.blend[0].weight",
                "expected a positive finite number");
        expect("train:\n  data:\n    blend:\n      - {weight: 1, prefix: a}\n      - {weight: -2, prefix: b}\n",
                "train.data.blend[1].weight", "expected a positive finite number");
        expect("train:\n  data:\n    blend:\n      - {weight: 1, prefix: x/a}\n      - {weight: 2, prefix: x/../x/a}\n",
                "train.data.blend[1].prefix", "the same corpus as train.data.blend[0].prefix");
        expect("train:\n  data:\n    prefix: p\n    blend:\n      - {weight: 1, prefix: a}\n", "train.data.blend",
                "expected null when train.data.prefix is set");
        expect("train:\n  data:\n    blend: []\n", "train.data.blend", "at least one");
        expect("train:\n  data:\n    blend:\n      - {weight: 1}\n", "train.data.blend[0].prefix", "missing");
        expect("train:\n  data:\n    blend:\n      - {weight: 1, prefix: a, extra: 2}\n", "train.data.blend[0].extra",
                "unknown key");
        expect("train:\n  data:\n    blend: 0.5 a 0.5\n", "train.data.blend", "expected pairs 'WEIGHT PREFIX …'");
        expect("train:\n  data:\n    blend: x a\n", "train.data.blend", "'x' is not a weight");
        expect("train:\n  data:\n    blend: 7\n", "train.data.blend", "expected a list of mappings");
    }

    @Test
    void validationNeedsAValidPartAndPositiveIters() {
        KdapackConfig c = ConfigLoader.fromYaml("train:\n  steps: 25\n  eval_interval: 10\n  eval_iters: 3\n");
        // Megatron's get_train_valid_test_num_samples: (25 // 10 + 1) * 3 * (4 * 2).
        assertEquals(3 * 3 * 8, c.train().validSamples());
        assertEquals(0, KdapackConfig.defaults().train().validSamples());
        expect("train:\n  eval_interval: 5\n  data:\n    split: 100,0,0\n", "train.eval_interval", "has no valid part");
        expect("train:\n  eval_interval: 5\n  data:\n    split: '100'\n", "train.eval_interval", "has no valid part");
        expect("train:\n  eval_iters: 0\n", "train.eval_iters", "expected an integer >= 1");
        expect("train:\n  eval_interval: -1\n", "train.eval_interval", "expected an integer >= 0");
        expect("model:\n  tokenizer: ' '\n", "model.tokenizer", "tokenizer.json");
        expect("train:\n  steps: 1000\n  eval_interval: 1\n  eval_iters: 2000000000\n", "train.eval_iters",
                "more than the 1073741822 an int32 sample index holds");
    }

    @Test
    void dataParallelDividesTheMicroBatches() {
        assertEquals(1, KdapackConfig.defaults().train().dataParallel());
        KdapackConfig c = ConfigLoader.fromYaml("train:\n  num_microbatches: 6\n  data_parallel: 3\n");
        assertEquals(3, c.train().dataParallel());
        assertEquals(2, c.train().microBatchesPerRank());
        expect("train:\n  num_microbatches: 6\n  data_parallel: 4\n", "train.data_parallel",
                "expected a divisor of train.num_microbatches (6)");
        expect("train:\n  data_parallel: 0\n", "train.data_parallel", "expected an integer >= 1");
        assertTrue(!c.fingerprint().equals(ConfigLoader.fromYaml("train:\n  num_microbatches: 6\n").fingerprint()),
                "the accumulation order depends on N, so N is part of the fingerprint");
    }

    private static void expect(String yaml, String key, String message) {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.fromYaml(yaml), yaml);
        assertEquals(key, e.key(), e.getMessage());
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}
