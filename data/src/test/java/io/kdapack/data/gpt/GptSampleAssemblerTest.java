package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.data.GoldenFiles;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** The padding sample and misuse: wrong ids, wrong buffers, indices of another corpus. */
class GptSampleAssemblerTest {
    private static final GptIndexConfig CONFIG = new GptIndexConfig(32, 1234, "98,2,0", DatasetSplit.TRAIN, 64L, true,
            true);

    private static IndexedDataset corpus(String name) throws IOException {
        return IndexedDataset.open(GoldenFiles.path("megatron/" + name).resolve("docs"));
    }

    @Test
    void paddingSampleIsSampleZeroWithoutLoss() throws IOException {
        IndexedDataset corpus = corpus("v1000_u16");
        GptSampleAssembler assembler = new GptSampleAssembler(corpus, GptIndices.build(corpus, CONFIG), 32, true,
                SampleOptions.plain(999, -1));
        GptSample first = assembler.newSample();
        GptSample padding = assembler.newSample();
        assembler.assemble(0, first);
        assembler.assemblePadding(padding);
        assertArrayEquals(first.tokens(), padding.tokens());
        assertArrayEquals(first.labels(), padding.labels());
        assertArrayEquals(new float[32], padding.lossMask());
    }

    @Test
    void misuseIsNamed() throws IOException {
        IndexedDataset corpus = corpus("v1000_u16");
        GptIndices indices = GptIndices.build(corpus, CONFIG);
        GptSampleAssembler assembler = new GptSampleAssembler(corpus, indices, 32, true, SampleOptions.plain(999, -1));
        GptSample sample = assembler.newSample();
        assertThrows(IllegalArgumentException.class, () -> assembler.assemble(-1, sample));
        assertThrows(IllegalArgumentException.class, () -> assembler.assemble(indices.sampleCount(), sample));
        assertThrows(IllegalArgumentException.class, () -> assembler.assemble(0, new GptSample(32, 0)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new GptSampleAssembler(corpus("v100_loss"), indices, 32, true, SampleOptions.plain(99, -1)));
        assertTrue(e.getMessage().contains("document_index"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SampleOptions.plain(7, 7));
    }
}
