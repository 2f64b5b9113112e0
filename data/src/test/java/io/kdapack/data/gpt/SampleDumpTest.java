package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.GoldenFiles;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Sample selection parsing, and a dump of golden samples under the golden names. */
class SampleDumpTest {

    @Test
    void sampleIdRanges() {
        assertArrayEquals(new int[] {0, 1, 2, 7, 9, 10}, SampleDump.parseSampleIds("0-2, 7,9-10", 11));
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("0-11", 11));
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("5-3", 11));
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("-1", 11));
        assertThrows(IllegalArgumentException.class, () -> SampleDump.parseSampleIds("a-b", 11));
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
