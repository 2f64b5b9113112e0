package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.data.GoldenFiles;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * The padding sample, the split against a sample worked out by hand, and misuse: wrong ids, wrong buffers, indices of
 * another corpus.
 */
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
    void splittingTheRawTextReadElsewhereGivesWhatAssembleGives() throws IOException {
        IndexedDataset corpus = corpus("v1000_u16");
        GptIndices indices = GptIndices.build(corpus, CONFIG);
        // EOD masking, position and segment resets on, a pad id: every branch of the split (inter-document masking
        // needs the read's document parts and is refused).
        SampleOptions options = new SampleOptions(999, 998, true, true, true, false);
        GptSampleAssembler assembler = new GptSampleAssembler(corpus, indices, 32, true, options);
        GptSample read = assembler.newSample();
        GptSample split = assembler.newSample();
        for (int i = 0; i < indices.sampleCount(); i++) {
            assembler.assemble(i, read);
            int[] raw = read.rawText().clone();
            if (i % 3 == 0) { // a short read: the tail is padding
                java.util.Arrays.fill(raw, 20, raw.length, 998);
            }
            int real = i % 3 == 0 ? Math.min(20, read.numRealTokens()) : read.numRealTokens();
            GptSampleAssembler.split(raw, real, options, split);
            if (i % 3 != 0) {
                assertArrayEquals(read.tokens(), split.tokens(), "tokens of sample " + i);
                assertArrayEquals(read.labels(), split.labels(), "labels of sample " + i);
                assertArrayEquals(read.lossMask(), split.lossMask(), "loss mask of sample " + i);
                assertArrayEquals(read.positionIds(), split.positionIds(), "positions of sample " + i);
                assertArrayEquals(read.segmentIds(), split.segmentIds(), "segment ids of sample " + i);
            } else {
                for (int t = 19; t < 32; t++) {
                    assertTrue(split.lossMask()[t] == 0f && split.labels()[t] == 0, "padding leaves the loss at " + t);
                }
                for (int t = 20; t < 32; t++) {
                    assertTrue(split.segmentIds()[t] == 0 && split.tokens()[t] == 0, "padding has segment 0 at " + t);
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> GptSampleAssembler.split(new int[33], 34, options, split));
        assertThrows(IllegalArgumentException.class, () -> GptSampleAssembler.split(new int[32], 0, options, split));
        assertThrows(IllegalArgumentException.class, () -> GptSampleAssembler.split(new int[33], 0,
                new SampleOptions(999, 998, true, true, true, true), split));
    }

    /**
     * The split of one raw text worked out by hand from the Megatron README (section 4), not from the code: L = 8,
     * x = 1, EOD 9, pad 8, two documents then padding. Masks and positions come from the inputs as read; then labels
     * equal to the pad leave the loss and pads become 0. Our segment ids put padding in segment 0, Megatron's
     * attention segments keep it in the segment after the last EOD.
     */
    @Test
    void splitFollowsMegatronsRulesOnAHandWorkedSample() {
        int[] raw = {5, 7, 9, 3, 4, 9, 8, 8, 8};
        GptSample out = new GptSample(8, 1);

        GptSampleAssembler.split(raw, 6, new SampleOptions(9, 8, true, true, true, false), out);
        assertArrayEquals(new int[] {5, 7, 9, 3, 4, 9, 0, 0}, out.tokens());
        assertArrayEquals(new int[] {7, 9, 3, 4, 9, 0, 0, 0}, out.labels());
        assertArrayEquals(new float[] {1, 1, 0, 1, 1, 0, 0, 0}, out.lossMask(), "EOD inputs and pad labels masked");
        assertArrayEquals(new int[] {0, 1, 2, 0, 1, 2, 0, 1}, out.positionIds(), "restart after each input EOD");
        assertArrayEquals(new int[] {1, 1, 1, 2, 2, 2, 3, 3}, out.attentionSegmentIds());
        assertArrayEquals(new int[] {1, 1, 1, 2, 2, 2, 0, 0}, out.segmentIds());

        GptSampleAssembler.split(raw, 6, new SampleOptions(9, 8, false, false, false, false), out);
        assertArrayEquals(new float[] {1, 1, 1, 1, 1, 0, 0, 0}, out.lossMask(), "without eod_mask_loss: pad labels only");
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7}, out.positionIds());
        assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1}, out.attentionSegmentIds());
        assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 0, 0}, out.segmentIds());
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
