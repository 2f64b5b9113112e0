package io.kdapack.data.gpt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Index arrays read from a cache (Megatron's {@code .npy} files, which a user can copy between datasets) are checked
 * against the dataset once, when the assembler is made: each value exactly at the edge of its range is accepted, the
 * first one past it is refused with a message naming the array, the entry and the value (PIT survivors of
 * {@code checkIndices}: each boundary moved by one went unnoticed).
 *
 * <p>The dataset: two documents of lengths 3 and 5 (tokens 1–3 and 4–8); L = 2 with the extra token, so a sample
 * reads the tokens from its row of {@code sample_index} to one past the next row.
 */
class GptIndicesCheckTest {
    private static final SampleOptions OPTIONS = new SampleOptions(9, -1, false, false, false, false);
    private static IndexedDataset dataset;

    @BeforeAll
    static void writeDataset(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("two");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.forVocabulary(10))) {
            builder.addDocument(new int[] {1, 2, 3});
            builder.addDocument(new int[] {4, 5, 6, 7, 8});
            builder.finish();
        }
        dataset = IndexedDataset.open(prefix);
    }

    private static GptSampleAssembler assembler(int[] documentIndex, int[] sampleIndex, int[] shuffleIndex) {
        return new GptSampleAssembler(dataset, new GptIndices(documentIndex, sampleIndex, shuffleIndex), 2, true,
                OPTIONS);
    }

    private static void refused(String message, int[] documentIndex, int[] sampleIndex, int[] shuffleIndex) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> assembler(documentIndex, sampleIndex, shuffleIndex));
        assertEquals(message, e.getMessage());
    }

    /**
     * Every value at the edge of its range: the last document (position and id), a row at the end offset of a
     * document, two equal rows (an empty sample but for the extra token), shuffle entries 0 and S − 1.
     */
    @Test
    void valuesAtTheEdgesAreAcceptedAndReadExactly() {
        // Samples: (0,3)→(1,1) reads nothing of document 0, then 4 5; (1,1)→(1,1) reads the extra token 5;
        // (1,1)→(1,3) reads 5 6 7. Padding is -1.
        GptSampleAssembler a = assembler(new int[] {0, 1}, new int[] {0, 3, 1, 1, 1, 1, 1, 3}, new int[] {2, 0, 1});
        GptSample sample = a.newSample();
        a.assemble(0, sample);
        assertArrayEquals(new int[] {5, 6, 7}, sample.rawText(), "dataset index 0 is sample 2 through shuffle_index");
        a.assemble(1, sample);
        assertArrayEquals(new int[] {4, 5, -1}, sample.rawText(), "a sample starting at the end of document 0");
        assertEquals(2, sample.numRealTokens());
        a.assemble(2, sample);
        assertArrayEquals(new int[] {5, -1, -1}, sample.rawText(), "equal rows: the extra token only");
        assertEquals(3, a.sampleCount());
        assertEquals(2, sample.sampleId(), "the dataset index assembled last");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> a.assemble(0, new GptSample(3, 1)));
        assertEquals("sample buffers hold 3+1 positions, expected 2+1", e.getMessage());
    }

    /** A sample may hold as many document parts as it has tokens (L + 1 documents of one token each). */
    @Test
    void aSampleOfOneTokenDocumentsReadsEveryPart(@TempDir Path dir) throws IOException {
        Path prefix = dir.resolve("ones");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.forVocabulary(10))) {
            for (int t = 1; t <= 4; t++) {
                builder.addDocument(new int[] {t});
            }
            builder.finish();
        }
        IndexedDataset ones = IndexedDataset.open(prefix);
        for (boolean interDocument : new boolean[] {false, true}) {
            GptSampleAssembler a = new GptSampleAssembler(ones, new GptIndices(new int[] {0, 1, 2, 3},
                    new int[] {0, 0, 2, 0}, new int[] {0}), 2, true,
                    new SampleOptions(9, -1, false, true, true, interDocument));
            GptSample sample = a.newSample();
            a.assemble(0, sample);
            assertArrayEquals(new int[] {1, 2, 3}, sample.rawText(), "inter-document masking " + interDocument);
        }
    }

    @Test
    void documentIndexOutsideTheDatasetIsRefused() {
        refused("document_index[1] = 2 outside the 2 sequences of " + dataset, new int[] {0, 2}, new int[] {0, 0, 0, 2},
                new int[] {0});
        refused("document_index[0] = -1 outside the 2 sequences of " + dataset, new int[] {-1, 1},
                new int[] {0, 0, 0, 2}, new int[] {0});
    }

    @Test
    void sampleIndexPositionsAndOffsetsOutsideTheirRangesAreRefused() {
        refused("sample_index[1] position 2 outside [0, 2)", new int[] {0, 1}, new int[] {0, 0, 2, 0},
                new int[] {0});
        refused("sample_index[0] position -1 outside [0, 2)", new int[] {0, 1}, new int[] {-1, 0, 0, 2},
                new int[] {0});
        refused("sample_index[1] offset 6 outside [0, 5] (document 1)", new int[] {0, 1}, new int[] {0, 0, 1, 6},
                new int[] {0});
        refused("sample_index[1] offset 4 outside [0, 3] (document 0)", new int[] {0, 1}, new int[] {0, 0, 0, 4},
                new int[] {0});
        refused("sample_index[0] offset -1 outside [0, 3] (document 0)", new int[] {0, 1}, new int[] {0, -1, 0, 2},
                new int[] {0});
    }

    @Test
    void sampleIndexRowsThatGoBackwardAreRefused() {
        refused("sample_index[1] = (0, 1) lies before row 0", new int[] {0, 1}, new int[] {0, 2, 0, 1},
                new int[] {0});
        refused("sample_index[2] = (0, 3) lies before row 1", new int[] {0, 1}, new int[] {0, 0, 1, 1, 0, 3},
                new int[] {0, 1});
        refused("sample_index[2] = (1, 0) lies before row 1", new int[] {0, 1}, new int[] {0, 0, 1, 1, 1, 0},
                new int[] {0, 1});
    }

    @Test
    void shuffleIndexOutsideTheSamplesIsRefused() {
        refused("shuffle_index[1] = 2 outside [0, 2)", new int[] {0, 1}, new int[] {0, 0, 0, 2, 1, 1},
                new int[] {0, 2});
        refused("shuffle_index[0] = -1 outside [0, 2)", new int[] {0, 1}, new int[] {0, 0, 0, 2, 1, 1},
                new int[] {-1, 1});
    }
}
