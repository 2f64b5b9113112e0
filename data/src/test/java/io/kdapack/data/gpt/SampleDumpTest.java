package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.GoldenFiles;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sample selection parsing, and a dump of golden samples under the golden names. */
class SampleDumpTest {

    @Test
    void sampleIdRanges() {
        assertArrayEquals(new int[] {0, 1, 2, 7, 9, 10}, SampleDump.parseSampleIds("0-2, 7,9-10", 11));
        assertEquals("samples '0-11': range 0-11 outside the dataset's samples [0, 10]",
                assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("0-11", 11)).getMessage());
        assertArrayEquals(new int[] {10}, SampleDump.parseSampleIds("10", 11), "the last id alone");
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("5-3", 11));
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("-1", 11));
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("a-b", 11));
    }

    @Test
    void aDumpOverItsPositionLimitIsRefusedBeforeAnySampleIsAssembled(@TempDir Path dir) throws IOException {
        // One document of L + 1 tokens, L = 2^20: a single sample (rows (0, 0) → (0, L)) read 32 times is
        // 32·(L + 1) = 2^25 + 32 positions, just past the limit of 2^25.
        int seqLength = 1 << 20;
        Path prefix = dir.resolve("long");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.forVocabulary(10))) {
            builder.addDocument(new int[seqLength + 1]);
            builder.finish();
        }
        IndexedDataset corpus = IndexedDataset.open(prefix);
        GptSampleAssembler assembler = new GptSampleAssembler(corpus,
                new GptIndices(new int[] {0}, new int[] {0, 0, 0, seqLength}, new int[] {0}), seqLength, true,
                SampleOptions.plain(9, -1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SampleDump.dump(assembler, new int[32], false, Map.of()));
        assertEquals("32 samples of 1048576 positions exceed the dump limit of 33554432 positions; choose fewer with "
                + "--samples", e.getMessage());
    }

    @Test
    void dumpUsesTheGoldenNamesAndValues() throws IOException {
        String name = "megatron/v70000_i32/L64_s1234_inter_document_masking.safetensors";
        SafeTensors golden = GoldenFiles.read(name);
        GptIndexConfig config = GptGoldenTest.indexConfig(golden);
        IndexedDataset corpus = GptGoldenTest.corpus(golden);
        GptSampleAssembler assembler = new GptSampleAssembler(corpus, GptIndices.build(corpus, config),
                config.seqLength(), true, GptGoldenTest.sampleOptions(golden));
        int[] ids = golden.get("sample_ids").toIntArray();
        SafeTensors dump = SampleDump.dump(assembler, ids, true, Map.of("case", "x"));
        for (String tensor : new String[] {"sample_ids", "raw_text", "num_real_tokens", "tokens", "labels", "loss_mask",
            "position_ids", "segment_ids", "cu_seqlens", "max_seqlen", "document_index", "sample_index",
            "shuffle_index"}) {
            assertEquals(golden.get(tensor).dtype(), dump.get(tensor).dtype(), tensor);
            assertArrayEquals(golden.get(tensor).shape(), dump.get(tensor).shape(), tensor);
            assertArrayEquals(golden.get(tensor).toDoubleArray(), dump.get(tensor).toDoubleArray(), tensor);
        }
        assertEquals("x", dump.meta("case"));
    }
}
