package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.GoldenFiles;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every case of golden/megatron-blend (written by Megatron-LM's BlendedMegatronDatasetBuilder itself): the blending
 * indices, each corpus's GPTDataset length and the dumped blended samples, bit for bit.
 */
class BlendedGoldenTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Stream<String> cases() throws IOException {
        JsonNode index = JSON.readTree(GoldenFiles.path("megatron-blend/index.json").toFile());
        List<String> files = new ArrayList<>();
        index.get("cases").forEach(c -> files.add(c.get("file").asText()));
        return files.stream();
    }

    /** The corpora a case names, opened from the test resources. */
    static List<IndexedDataset> corpora(SafeTensors golden) throws IOException {
        List<IndexedDataset> out = new ArrayList<>();
        for (JsonNode name : JSON.readTree(golden.meta("corpora"))) {
            out.add(IndexedDataset.open(GoldenFiles.path("megatron-blend/" + name.asText()).resolve("docs")));
        }
        return out;
    }

    static double[] weights(SafeTensors golden) throws IOException {
        JsonNode w = JSON.readTree(golden.meta("weights"));
        double[] out = new double[w.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = w.get(i).asDouble();
        }
        return out;
    }

    /** Megatron's GPTDatasetConfig defaults: an extra token per sample, the last partial valid sample dropped. */
    static GptIndexConfig indexConfig(SafeTensors golden) {
        return new GptIndexConfig(Integer.parseInt(golden.meta("seq_length")), Long.parseLong(golden.meta("random_seed")),
                golden.meta("split"), DatasetSplit.parse(golden.meta("index_split")),
                Long.valueOf(golden.meta("num_samples")), true, true);
    }

    static SampleOptions options(SafeTensors golden) {
        return new SampleOptions(Integer.parseInt(golden.meta("eod_id")), Integer.parseInt(golden.meta("pad_id")),
                flag(golden, "eod_mask_loss"), flag(golden, "reset_position_ids"), flag(golden, "reset_attention_mask"),
                false);
    }

    private static boolean flag(SafeTensors golden, String key) {
        return Boolean.parseBoolean(golden.meta(key));
    }

    private static BlendedIndices build(SafeTensors golden) throws IOException {
        List<IndexedDataset> corpora = corpora(golden);
        List<String> names = corpora.stream().map(Object::toString).toList();
        return BlendedIndices.build(corpora, names, weights(golden), indexConfig(golden));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void blendingIndicesAndCorpusSizesMatch(String file) throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron-blend/" + file);
        BlendedIndices blend = build(golden);
        assertArrayEquals(golden.get("dataset_index").toIntArray(), blend.datasetIndex(), "dataset_index");
        assertArrayEquals(golden.get("dataset_sample_index").toIntArray(), blend.datasetSampleIndex(),
                "dataset_sample_index");
        for (int i = 0; i < blend.corpora().size(); i++) {
            assertEquals(golden.get("size." + i).toLongArray()[0], blend.corpora().get(i).sampleCount(), "size." + i);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void blendedSamplesMatch(String file) throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron-blend/" + file);
        GptIndexConfig config = indexConfig(golden);
        BlendedSampleAssembler assembler = new BlendedSampleAssembler(corpora(golden), build(golden), config.seqLength(),
                true, options(golden));
        int length = config.seqLength();
        int[] tokens = golden.get("tokens").toIntArray();
        int[] labels = golden.get("labels").toIntArray();
        float[] lossMask = golden.get("loss_mask").toFloatArray();
        int[] positions = golden.get("position_ids").toIntArray();
        int dumped = Integer.parseInt(golden.meta("num_dumped_samples"));
        GptSample sample = assembler.newSample();
        int blended = golden.get("dataset_index").toIntArray().length;
        assertEquals(blended, assembler.sampleCount(), "the blend's length");
        assertEquals(blended, assembler.indices().sampleCount(), "the blend's indices");
        // Megatron's BlendedDataset serves ids [0, size): one past either end is an error naming the id.
        assertEquals("blended sample id " + blended + " outside [0, " + blended + ")",
                assertThrows(IllegalArgumentException.class, () -> assembler.assemble(blended, sample)).getMessage());
        assertEquals("blended sample id -1 outside [0, " + blended + ")",
                assertThrows(IllegalArgumentException.class, () -> assembler.assemble(-1, sample)).getMessage());
        for (int s = 0; s < dumped; s++) {
            assembler.assemble(s, sample);
            String at = file + " blended sample " + s;
            assertArrayEquals(Arrays.copyOfRange(tokens, s * length, (s + 1) * length), sample.tokens(), at + " tokens");
            assertArrayEquals(Arrays.copyOfRange(labels, s * length, (s + 1) * length), sample.labels(), at + " labels");
            assertArrayEquals(Arrays.copyOfRange(lossMask, s * length, (s + 1) * length), sample.lossMask(),
                    at + " loss_mask");
            assertArrayEquals(Arrays.copyOfRange(positions, s * length, (s + 1) * length), sample.positionIds(),
                    at + " position_ids");
        }
    }

    @Test
    void weightsAreNormalisedTwiceAndTheLastBitsCanDiffer() {
        double[] once = BlendedIndices.normalize(new double[] {0.6, 0.3, 0.1});
        double[] twice = BlendedIndices.normalize(once);
        // 0.6 + 0.3 + 0.1 sums to 0.9999999999999999 in float64: the second normalisation moves the weights again.
        assertNotEquals(Arrays.toString(once), Arrays.toString(twice));
        assertEquals(0.6, BlendedIndices.normalize(new double[] {6, 3, 1})[0]);
    }

    @Test
    void numpySumMatchesItsPairwiseOrder() {
        double[] small = {0.1, 0.2, 0.3};
        assertEquals((0.1 + 0.2) + 0.3, BlendedIndices.numpySum(small));
        double[] nine = new double[9];
        Arrays.fill(nine, 0.1);
        double r = 0.1 + 0.1; // r0 + r1 etc.: eight lanes of one value each, then the ninth
        assertEquals(((r + r) + (r + r)) + 0.1, BlendedIndices.numpySum(nine));
    }

    /**
     * numpy's float64 sums of {@code w_i = 1 / ((7919·i mod 1009) + 3) · 2^(7·(i mod 3))}, {@code i < n} (reciprocals
     * with full mantissas over three magnitudes, so the order of additions shows in the last bits), written by numpy
     * 2.4.6: {@code float(numpy.sum(numpy.array(w))).hex()}. Each n crosses one edge of numpy's pairwise_sum: 8 (the
     * first length it unrolls), 9 and 23 (a remainder after the eight lanes), 16 (two blocks), 128 (the last length
     * without a split), 129, 300 and 1000 (split in halves, the first a multiple of 8). For every n but 129 a plain left
     * to right sum differs from numpy's.
     */
    private static final double[][] NUMPY_SUMS = {
        {8, 0x1.69f4078572757p+6}, {9, 0x1.bc2e7d150688bp+6}, {16, 0x1.6c79f9bca27d1p+7}, {23, 0x1.dd3da8d3b96b3p+7},
        {128, 0x1.53b1f45a0fd56p+11}, {129, 0x1.571d3a03bb367p+11}, {300, 0x1.d0131f8e80222p+12},
        {1000, 0x1.cc421c02a6f3fp+14},
    };

    @Test
    void normalizeDividesByNumpysPairwiseSumForBlendsOfMoreThanEightCorpora() {
        for (double[] row : NUMPY_SUMS) {
            int n = (int) row[0];
            double[] weights = new double[n];
            for (int i = 0; i < n; i++) {
                weights[i] = 1.0 / ((i * 7919 % 1009) + 3) * (1 << (7 * (i % 3)));
            }
            double[] normalized = BlendedIndices.normalize(weights);
            // Megatron's normalize is w / numpy.sum(w), element by element: bit-identical, no tolerance.
            for (int i = 0; i < n; i++) {
                assertEquals(weights[i] / row[1], normalized[i], n + " weights, weight " + i);
            }
        }
    }

    @Test
    void eachCorpusIsBuiltForItsShareAndTheMidLevelSurplus(@TempDir Path dir) throws IOException {
        // T = 10·4 + 1 = 41 tokens, L = 4, x = 1. Megatron asks each corpus for ceil(ceil(N·w)·(1 + 0.005)) samples:
        // N = 10, w = 1 → ceil(10.05) = 11, so 11·4 + 1 = 45 > 41 tokens needs E = 2 epochs and the corpus holds
        // (2·41 − 1) // 4 = 20 samples (its share alone, 10, would fit in one epoch of (41 − 1) // 4 = 10).
        Path prefix = dir.resolve("docs");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.forVocabulary(10))) {
            for (int d = 0; d < 10; d++) {
                builder.addDocument(new int[] {1, 2, 3, 9});
            }
            builder.addDocument(new int[] {9});
            builder.finish();
        }
        GptIndexConfig config = new GptIndexConfig(4, 1234, "1,0,0", DatasetSplit.TRAIN, 10L, true, true);
        BlendedIndices blend = BlendedIndices.build(List.of(IndexedDataset.open(prefix)), List.of("docs"),
                new double[] {1.0}, config);
        assertEquals(20, blend.corpora().get(0).sampleCount());
        assertEquals(10, blend.sampleCount());
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, blend.datasetSampleIndex());
    }

    @Test
    void badWeightsAndCorporaWithoutThePartAreErrorsNamingThem() throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron-blend/blend2_L32_s1234_70_30.safetensors");
        List<IndexedDataset> corpora = corpora(golden);
        List<String> names = List.of("short", "long");
        GptIndexConfig config = indexConfig(golden);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BlendedIndices.build(corpora, names, new double[] {0.5, 0}, config));
        assertEquals("blend weight 1 = 0.0: every weight must be a positive finite number", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> BlendedIndices.build(corpora, names, new double[] {-1, 2}, config));
        assertTrue(e.getMessage().startsWith("blend weight 0 = -1.0"), e.getMessage());
        GptIndexConfig noTest = new GptIndexConfig(32, 1234, "98,2,0", DatasetSplit.TEST, 10L, true, true);
        e = assertThrows(IllegalArgumentException.class,
                () -> BlendedIndices.build(corpora, names, new double[] {0.5, 0.5}, noTest));
        assertEquals("blend corpus 0 (short): split '98,2,0' has no test part", e.getMessage());
        // 99.9 % train: the valid part of the short corpus rounds to no document at all.
        GptIndexConfig tinyValid = new GptIndexConfig(32, 1234, "999,1,0", DatasetSplit.VALID, 10L, true, true);
        e = assertThrows(IllegalArgumentException.class,
                () -> BlendedIndices.build(corpora, names, new double[] {0.5, 0.5}, tinyValid));
        assertTrue(e.getMessage().startsWith("blend corpus 0 (short): split part valid holds 0 tokens"), e.getMessage());
    }
}
