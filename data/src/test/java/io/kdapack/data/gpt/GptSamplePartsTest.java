package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Megatron's inter-document masking path and the read's length check on a corpus small enough to work out by hand
 * (PIT survivors, issue 17). The expected tensors follow golden/megatron/README.md: the read of section 3.7, the
 * tensors of section 4 and its {@code inter_document_masking = true} rule (parts read per document; with x = 1 the last
 * part loses a token and is dropped when empty; a shortfall below L is added to the last part; {@code cu_seqlens} =
 * [0, cumsum(parts)] padded to L+1 with L; positions restart at each part).
 */
class GptSamplePartsTest {
    private static final int EOD = 9;
    private static final int PAD = -1;

    /** A = [1,2,3,9], B = [4,5,9], C = [6,7,8,9] (T = 11 tokens), and D = [9], an empty document with its EOD. */
    private static IndexedDataset corpus(Path dir) throws IOException {
        Path prefix = dir.resolve("docs");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.forVocabulary(10))) {
            builder.addDocument(new int[] {1, 2, 3, EOD});
            builder.addDocument(new int[] {4, 5, EOD});
            builder.addDocument(new int[] {6, 7, 8, EOD});
            builder.addDocument(new int[] {EOD});
            builder.finish();
        }
        return IndexedDataset.open(prefix);
    }

    /**
     * Megatron's build_sample_idx for L = 4, x = 1, the documents in the order A, B, C and the last partial sample
     * kept (a validation part): samples start at stream tokens 0, 4, 8; a row is (position, offset) of that start, the
     * last row (2, len(C) − x) = (2, 3). {@code ceil((11 − 1) / 4)} = 3 samples; no shuffle.
     */
    private static GptIndices indices() {
        return new GptIndices(new int[] {0, 1, 2}, new int[] {0, 0, 1, 0, 2, 1, 2, 3}, new int[] {0, 1, 2});
    }

    private static void assertSample(GptSample s, int[] tokens, int[] labels, float[] lossMask, int[] positions,
                                     int[] segments, int[] cuSeqlens, int maxSeqlen, String at) {
        assertArrayEquals(tokens, s.tokens(), at + " tokens");
        assertArrayEquals(labels, s.labels(), at + " labels");
        assertArrayEquals(lossMask, s.lossMask(), at + " loss_mask");
        assertArrayEquals(positions, s.positionIds(), at + " position_ids");
        assertArrayEquals(segments, s.segmentIds(), at + " segment ids");
        assertArrayEquals(cuSeqlens, s.cuSeqlens(), at + " cu_seqlens");
        assertEquals(maxSeqlen, s.maxSeqlen(), at + " max_seqlen");
    }

    @Test
    void interDocumentMaskingGivesOneSegmentPerDocumentPartRead(@TempDir Path dir) throws IOException {
        GptSampleAssembler assembler = new GptSampleAssembler(corpus(dir), indices(), 4, true,
                new SampleOptions(EOD, PAD, false, false, false, true));
        // One buffer for all three, in this order: what a part count left behind by one sample must not leak into the
        // next.
        GptSample s = assembler.newSample();
        // Sample 0 reads A whole and B[0] (the extra token): parts [4, 1]; the last loses its token and, empty, is
        // dropped: one part of 4.
        assembler.assemble(0, s);
        assertSample(s, new int[] {1, 2, 3, 9}, new int[] {2, 3, 9, 4}, new float[] {1, 1, 1, 1},
                new int[] {0, 1, 2, 3}, new int[] {1, 1, 1, 1}, new int[] {0, 4, 4, 4, 4}, 4, "sample 0");
        // Sample 1 reads B whole and C[0..2): parts [3, 2] → [3, 1]; positions restart at C.
        assembler.assemble(1, s);
        assertSample(s, new int[] {4, 5, 9, 6}, new int[] {5, 9, 6, 7}, new float[] {1, 1, 1, 1},
                new int[] {0, 1, 2, 0}, new int[] {1, 1, 1, 2}, new int[] {0, 3, 4, 4, 4}, 3, "sample 1");
        // Sample 2, the final partial window, reads C[1..4) = [7, 8, 9] and two pads: parts [3] → [2], the shortfall
        // of 2 added to it → [4]. Pad labels are 0 with loss 0; pad tokens become 0; padding is in no segment.
        assembler.assemble(2, s);
        assertSample(s, new int[] {7, 8, 9, 0}, new int[] {8, 9, 0, 0}, new float[] {1, 1, 0, 0},
                new int[] {0, 1, 2, 3}, new int[] {1, 1, 1, 0}, new int[] {0, 4, 4, 4, 4}, 4, "sample 2");
        assertEquals(3, s.numRealTokens());
    }

    @Test
    void aDroppedExtraTokenPartLeavesNoPartOfAnEarlierSampleBehind(@TempDir Path dir) throws IOException {
        // Documents in the order A, D, D, B; L = 4, x = 1. Sample 1 (rows (1, 0) → (3, 2)) reads D, D and B[0..3):
        // parts [1, 1, 3] → [1, 1, 2]. Sample 0 (rows (0, 0) → (1, 0)) reads A and D's EOD as its extra token:
        // parts [4, 1] → [4], assembled after sample 1 into the same buffer.
        GptIndices indices = new GptIndices(new int[] {0, 3, 3, 1, 2}, new int[] {0, 0, 1, 0, 3, 2}, new int[] {0, 1});
        GptSampleAssembler assembler = new GptSampleAssembler(corpus(dir), indices, 4, true,
                new SampleOptions(EOD, PAD, false, false, false, true));
        GptSample s = assembler.newSample();
        assembler.assemble(1, s);
        assertSample(s, new int[] {9, 9, 4, 5}, new int[] {9, 4, 5, 9}, new float[] {1, 1, 1, 1},
                new int[] {0, 0, 0, 1}, new int[] {1, 2, 3, 3}, new int[] {0, 1, 2, 4, 4}, 2, "sample 1");
        assembler.assemble(0, s);
        assertSample(s, new int[] {1, 2, 3, 9}, new int[] {2, 3, 9, 9}, new float[] {1, 1, 1, 1},
                new int[] {0, 1, 2, 3}, new int[] {1, 1, 1, 1}, new int[] {0, 4, 4, 4, 4}, 4, "sample 0 after 1");
    }

    @Test
    void indicesThatReadPastLPlusXAreRefusedAtTheReadNotWrittenPastTheBuffer(@TempDir Path dir) throws IOException {
        // Rows (0, 2) → (1, 2): A[2..4) (2 tokens) then B[0..3) (o1 + x = 3): 5 tokens, more than L + x = 4 (L = 3).
        // Every value is inside its array, so only the read can tell; the first part fits, the second does not.
        GptIndices tooLong = new GptIndices(new int[] {0, 1, 2}, new int[] {0, 2, 1, 2}, new int[] {0});
        GptSampleAssembler assembler = new GptSampleAssembler(corpus(dir), tooLong, 3, true,
                SampleOptions.plain(EOD, PAD));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> assembler.assemble(0, assembler.newSample()));
        assertEquals("sample 0 reads more than L+x = 4 tokens: the indices do not fit this dataset", e.getMessage());
    }

    @Test
    void splitTakesZeroToAllOfTheRawTokensAsReal() {
        SampleOptions options = SampleOptions.plain(EOD, PAD);
        GptSample out = new GptSample(4, 1);
        int[] raw = {1, 2, EOD, 4, 5};
        // All L + x tokens real (a full sample): tokens raw[0..L), labels raw[1..L], every position in segment 1.
        GptSampleAssembler.split(raw, 5, options, out);
        assertArrayEquals(new int[] {1, 2, EOD, 4}, out.tokens());
        assertArrayEquals(new int[] {2, EOD, 4, 5}, out.labels());
        assertArrayEquals(new int[] {1, 1, 1, 1}, out.segmentIds());
        // None real: every position is padding, in no segment.
        GptSampleAssembler.split(raw, 0, options, out);
        assertArrayEquals(new int[] {0, 0, 0, 0}, out.segmentIds());
        assertEquals("numRealTokens = 6 outside [0, 5]", assertThrows(IllegalArgumentException.class,
                () -> GptSampleAssembler.split(raw, 6, options, out)).getMessage());
        assertEquals("numRealTokens = -1 outside [0, 5]", assertThrows(IllegalArgumentException.class,
                () -> GptSampleAssembler.split(raw, -1, options, out)).getMessage());
    }
}
