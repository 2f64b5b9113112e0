package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.GoldenFiles;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every configuration of golden/megatron (written by Megatron-LM itself): the epoch plan, the three index arrays and
 * every dumped sample's tensors, element for element (integers exact, the 0/1 loss mask exact).
 */
class GptGoldenTest {

    static Stream<String> cases() throws IOException {
        JsonNode index = new ObjectMapper().readTree(GoldenFiles.path("megatron/index.json").toFile());
        List<String> files = new ArrayList<>();
        index.get("cases").forEach(c -> files.add(c.get("file").asText()));
        return files.stream();
    }

    /** The index and sample settings a golden file records in its metadata. */
    static GptIndexConfig indexConfig(SafeTensors golden) {
        String numSamples = golden.meta("num_samples");
        return new GptIndexConfig(Integer.parseInt(golden.meta("seq_length")), Long.parseLong(golden.meta("random_seed")),
                golden.meta("split"), DatasetSplit.parse(golden.meta("index_split")),
                numSamples.equals("None") ? null : Long.valueOf(numSamples),
                flag(golden, "add_extra_token_to_sequence"), flag(golden, "drop_last_partial_validation_sequence"));
    }

    static SampleOptions sampleOptions(SafeTensors golden) {
        return new SampleOptions(Integer.parseInt(golden.meta("eod_id")), Integer.parseInt(golden.meta("pad_id")),
                flag(golden, "eod_mask_loss"), flag(golden, "reset_position_ids"), flag(golden, "reset_attention_mask"),
                flag(golden, "inter_document_masking"));
    }

    static boolean flag(SafeTensors golden, String key) {
        return Boolean.parseBoolean(golden.meta(key));
    }

    static IndexedDataset corpus(SafeTensors golden) throws IOException {
        return IndexedDataset.open(GoldenFiles.path("megatron/" + golden.meta("corpus")).resolve(golden.meta("corpus_prefix")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void epochPlanMatches(String file) throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron/" + file);
        GptIndexConfig config = indexConfig(golden);
        EpochPlan plan = EpochPlan.of(GptIndices.tokensPerEpoch(corpus(golden), config), config);
        assertEquals(Long.parseLong(golden.meta("tokens_per_epoch")), plan.tokensPerEpoch(), "tokens_per_epoch");
        assertEquals(Integer.parseInt(golden.meta("num_epochs")), plan.numEpochs(), "num_epochs");
        assertEquals(flag(golden, "separate_final_epoch"), plan.separateFinalEpoch(), "separate_final_epoch");
        if (plan.numEpochs() > 1) {
            assertEquals(Long.parseLong(golden.meta("num_samples_sans_final_epoch")), plan.samplesSansFinalEpoch());
        }
        String[] range = golden.meta("indexed_indices").split("\\.\\.");
        SplitRanges.DocumentRange documents = GptIndices.documents(corpus(golden), config);
        assertEquals(Integer.parseInt(range[0]), documents.begin(), "first document");
        assertEquals(Integer.parseInt(range[1]) + 1, documents.end(), "end of documents");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void indicesMatch(String file) throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron/" + file);
        GptIndices indices = GptIndices.build(corpus(golden), indexConfig(golden));
        assertArrayEquals(golden.get("document_index").toIntArray(), indices.documentIndex(), "document_index");
        assertArrayEquals(golden.get("sample_index").toIntArray(), indices.sampleIndex(), "sample_index");
        assertArrayEquals(golden.get("shuffle_index").toIntArray(), indices.shuffleIndex(), "shuffle_index");
        assertEquals(Integer.parseInt(golden.meta("dataset_length")), indices.sampleCount(), "dataset_length");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void samplesMatch(String file) throws IOException {
        SafeTensors golden = GoldenFiles.read("megatron/" + file);
        GptIndexConfig config = indexConfig(golden);
        GptSampleAssembler assembler = new GptSampleAssembler(corpus(golden), GptIndices.build(corpus(golden), config),
                config.seqLength(), config.addExtraToken(), sampleOptions(golden));
        int length = config.seqLength();
        int width = length + config.extraTokens();
        long[] ids = golden.get("sample_ids").toLongArray();
        int[] raw = golden.get("raw_text").toIntArray();
        int[] real = golden.get("num_real_tokens").toIntArray();
        int[] tokens = golden.get("tokens").toIntArray();
        int[] labels = golden.get("labels").toIntArray();
        float[] lossMask = golden.get("loss_mask").toFloatArray();
        int[] positions = golden.get("position_ids").toIntArray();
        int[] segments = golden.get("segment_ids").toIntArray();
        int[] attention = golden.has("attention_mask") ? golden.get("attention_mask").toIntArray() : null;
        int[] cuSeqlens = golden.has("cu_seqlens") ? golden.get("cu_seqlens").toIntArray() : null;
        int[] maxSeqlen = golden.has("max_seqlen") ? golden.get("max_seqlen").toIntArray() : null;
        GptSample sample = assembler.newSample();
        for (int k = 0; k < ids.length; k++) {
            assembler.assemble((int) ids[k], sample);
            String at = file + " sample " + ids[k];
            assertArrayEquals(row(raw, k, width), sample.rawText(), at + " raw_text");
            assertEquals(real[k], sample.numRealTokens(), at + " num_real_tokens");
            assertArrayEquals(row(tokens, k, length), sample.tokens(), at + " tokens");
            assertArrayEquals(row(labels, k, length), sample.labels(), at + " labels");
            assertArrayEquals(Arrays.copyOfRange(lossMask, k * length, (k + 1) * length), sample.lossMask(),
                    at + " loss_mask");
            assertArrayEquals(row(positions, k, length), sample.positionIds(), at + " position_ids");
            int[] expectedSegments = row(segments, k, length);
            assertArrayEquals(expectedSegments, sample.attentionSegmentIds(), at + " segment_ids");
            for (int i = Math.min(real[k], length); i < length; i++) {
                expectedSegments[i] = 0;
            }
            assertArrayEquals(expectedSegments, sample.segmentIds(), at + " kdapack segment ids (padding 0)");
            if (attention != null) {
                assertArrayEquals(row(attention, k, length * length), denseMask(sample.attentionSegmentIds()),
                        at + " attention_mask from segment ids");
            }
            if (cuSeqlens != null) {
                assertArrayEquals(row(cuSeqlens, k, length + 1), sample.cuSeqlens(), at + " cu_seqlens");
                assertEquals(maxSeqlen[k], sample.maxSeqlen(), at + " max_seqlen");
            }
        }
    }

    /** Megatron's dense mask from segment ids: 1 = masked, 0 where {@code k <= q} in the same segment. */
    private static int[] denseMask(int[] segments) {
        int length = segments.length;
        int[] mask = new int[length * length];
        for (int q = 0; q < length; q++) {
            for (int k = 0; k < length; k++) {
                mask[q * length + k] = k <= q && segments[q] == segments[k] ? 0 : 1;
            }
        }
        return mask;
    }

    private static int[] row(int[] values, int k, int width) {
        return Arrays.copyOfRange(values, k * width, (k + 1) * width);
    }
}
