package io.kdapack.data.corpus;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Document length and documents-per-sample statistics on a hand-counted dataset. */
class CorpusStatsTest {
    @TempDir
    Path dir;

    @Test
    void handCountedDataset() throws IOException {
        // Lengths 3, 5, 1, 0, 7, 2: 18 tokens. L = 4: samples are windows [0,4) [4,8) [8,12) [12,16) ((18−1) div 4 = 4).
        // Document spans: [0,3) [3,8) [8,9) [9,9) [9,16) [16,18).
        // Window [0,4): docs 0,1 → 2; [4,8): doc 1 → 1; [8,12): docs 2,4 → 2 (the empty one does not count);
        // [12,16): doc 4 → 1.
        Path prefix = dir.resolve("d");
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix, TokenDType.UINT16)) {
            for (int length : new int[] {3, 5, 1, 0, 7, 2}) {
                builder.addDocument(new int[length]);
            }
            builder.finish();
        }
        CorpusStats stats = CorpusStats.of(IndexedDataset.open(prefix), 4);
        assertEquals(6, stats.documents());
        assertEquals(18, stats.tokens());
        assertEquals(new CorpusStats.Distribution(6, 0, 3.0, 2, 7, 7, 7), stats.documentLength());
        assertEquals(4, stats.samples());
        assertEquals(new CorpusStats.Distribution(4, 1, 1.5, 1, 2, 2, 2), stats.documentsPerSample());
    }

    @Test
    void nearestRankPercentiles() {
        int[] sorted = new int[100];
        java.util.Arrays.setAll(sorted, i -> i + 1);
        CorpusStats.Distribution d = CorpusStats.Distribution.ofSorted(sorted);
        assertEquals(50, d.p50());
        assertEquals(90, d.p90());
        assertEquals(99, d.p99());
        long[] histogram = new long[101];
        for (int v : sorted) {
            histogram[v]++;
        }
        assertEquals(d, CorpusStats.Distribution.ofHistogram(histogram));
    }
}
