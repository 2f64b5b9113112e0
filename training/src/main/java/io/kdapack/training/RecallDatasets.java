package io.kdapack.training;

import io.kdapack.data.indexed.IndexedDatasetBuilder;
import io.kdapack.data.indexed.TokenDType;
import io.kdapack.data.synthetic.AssociativeRecall;
import java.io.IOException;
import java.nio.file.Path;

/** Writes associative-recall documents as a Megatron indexed dataset (one sequence per document). */
public final class RecallDatasets {

    private RecallDatasets() {
    }

    /**
     * Writes {@code documents} documents of {@code task}, deterministic in {@code seed}, to {@code PREFIX.bin/.idx}
     * (atomically, in the token type Megatron's {@code preprocess_data.py} picks for the vocabulary).
     */
    public static void write(Path prefix, AssociativeRecall task, int documents, long seed) throws IOException {
        if (documents < 1) {
            throw new IllegalArgumentException("documents must be >= 1, got " + documents);
        }
        try (IndexedDatasetBuilder builder = new IndexedDatasetBuilder(prefix,
                TokenDType.forVocabulary(task.vocabularySize()))) {
            for (int[] document : task.documents(seed, documents)) {
                builder.addDocument(document);
            }
            builder.finish();
        }
    }
}
