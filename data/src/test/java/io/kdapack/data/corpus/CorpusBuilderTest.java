package io.kdapack.data.corpus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.indexed.TokenDType;
import io.kdapack.data.tokenizer.ByteTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CorpusBuilderTest {
    @TempDir
    Path dir;

    @Test
    void textLinesBecomeDocumentsEndingInEod() throws IOException {
        Path input = dir.resolve("c.txt");
        Files.writeString(input, "ab\n\n  \nc\n");
        CorpusBuilder.Summary summary = CorpusBuilder.build(input, new ByteTokenizer(), dir.resolve("c"));
        assertEquals(new CorpusBuilder.Summary(2, 5, TokenDType.UINT16), summary);
        IndexedDataset dataset = IndexedDataset.open(dir.resolve("c"));
        assertArrayEquals(new int[] {'a', 'b', 256}, dataset.sequence(0));
        assertArrayEquals(new int[] {'c', 256}, dataset.sequence(1));
    }

    @Test
    void badInputsAreNamedAndLeaveNoDataset() throws IOException {
        Path csv = dir.resolve("c.csv");
        Files.writeString(csv, "x\n");
        assertThrows(IllegalArgumentException.class, () -> CorpusBuilder.build(csv, new ByteTokenizer(), dir.resolve("o")));
        Path jsonl = dir.resolve("c.jsonl");
        Files.writeString(jsonl, "{\"text\": \"fine\"}\n{\"text\": 3}\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CorpusBuilder.build(jsonl, new ByteTokenizer(), dir.resolve("o")));
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
        Files.writeString(jsonl, "{\"text\": \"fine\"}\n{not json\n");
        e = assertThrows(IllegalArgumentException.class,
                () -> CorpusBuilder.build(jsonl, new ByteTokenizer(), dir.resolve("o")));
        assertTrue(e.getMessage().contains("line 2: malformed JSON"), e.getMessage());
        assertFalse(Files.exists(dir.resolve("o.idx")));
        assertFalse(Files.exists(dir.resolve("o.bin")));
    }
}
