package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DataRootTest {

    @TempDir
    Path temp;

    private void refused(DataRoot root, String path) {
        ApiException e = assertThrows(ApiException.class, () -> root.resolve(path, "data.prefix"));
        assertEquals(400, e.status().code());
        assertEquals("data.prefix", e.field());
        assertTrue(e.getMessage().contains(path), e.getMessage());
    }

    @Test
    void resolvesInsideAndRefusesEscapes() throws Exception {
        Path rootDir = Files.createDirectories(temp.resolve("data"));
        Files.createDirectories(rootDir.resolve("corpus"));
        Files.createDirectories(temp.resolve("secret"));
        Files.createSymbolicLink(rootDir.resolve("out"), temp.resolve("secret"));
        Files.createSymbolicLink(rootDir.resolve("alias"), rootDir.resolve("corpus"));
        DataRoot root = new DataRoot(rootDir);
        Path real = rootDir.toRealPath();

        assertEquals(real.resolve("corpus/docs"), root.resolve("corpus/docs", "f"), "a file that does not exist yet");
        assertEquals(real.resolve("corpus/docs"), root.resolve("corpus/../corpus/docs", "f"));
        assertEquals(real.resolve("alias/docs"), root.resolve("alias/docs", "f"), "a link that stays inside");

        refused(root, "../secret/docs");
        refused(root, "corpus/../../secret");
        refused(root, temp.resolve("secret/docs").toString());
        refused(root, "out/docs");
        refused(root, "out");
        refused(root, "");
        assertEquals(real, root.root());
        Files.createSymbolicLink(rootDir.resolve("dangling"), temp.resolve("nowhere"));
        ApiException dangling = assertThrows(ApiException.class, () -> root.resolve("dangling/docs", "f"));
        assertTrue(dangling.getMessage().contains("'dangling/docs' cannot be resolved"), dangling.getMessage());
    }

    /** The {@code .idx} and {@code .bin} of {@code prefix}, with {@code content} in each. */
    private static void dataset(Path prefix, String content) throws Exception {
        Files.writeString(prefix.resolveSibling(prefix.getFileName() + ".idx"), content);
        Files.writeString(prefix.resolveSibling(prefix.getFileName() + ".bin"), content);
    }

    private static String refusedDataset(DataRoot root, String prefix) {
        ApiException e = assertThrows(ApiException.class, () -> root.dataset(prefix, "train.data.prefix"));
        assertEquals(400, e.status().code());
        assertEquals("train.data.prefix", e.field());
        assertTrue(e.getMessage().contains("'" + prefix + "'"), e.getMessage());
        return e.getMessage();
    }

    @Test
    void aDatasetIsConfinedByTheRealPathOfEachOfItsFiles() throws Exception {
        Path rootDir = Files.createDirectories(temp.resolve("data"));
        Path corpus = Files.createDirectories(rootDir.resolve("corpus"));
        Path outside = Files.createDirectories(temp.resolve("outside"));
        dataset(corpus.resolve("docs"), "inside");
        dataset(corpus.resolve("other"), "inside");
        dataset(outside.resolve("secret"), "SECRET BYTES");
        Files.createSymbolicLink(rootDir.resolve("alias"), corpus);
        Files.createSymbolicLink(rootDir.resolve("linked.idx"), corpus.resolve("docs.idx"));
        Files.createSymbolicLink(rootDir.resolve("linked.bin"), corpus.resolve("docs.bin"));
        Files.createSymbolicLink(rootDir.resolve("leak.idx"), outside.resolve("secret.idx"));
        Files.writeString(rootDir.resolve("leak.bin"), "inside");
        Files.createSymbolicLink(rootDir.resolve("leakbin.idx"), corpus.resolve("docs.idx"));
        Files.createSymbolicLink(rootDir.resolve("leakbin.bin"), outside.resolve("secret.bin"));
        Files.createSymbolicLink(rootDir.resolve("mixed.idx"), corpus.resolve("docs.idx"));
        Files.createSymbolicLink(rootDir.resolve("mixed.bin"), corpus.resolve("other.bin"));
        Files.createSymbolicLink(rootDir.resolve("dangling.idx"), rootDir.resolve("nothing.idx"));
        Files.writeString(rootDir.resolve("dangling.bin"), "inside");
        Files.writeString(rootDir.resolve("half.idx"), "inside");
        Files.createDirectories(rootDir.resolve("folder.idx"));
        Files.writeString(rootDir.resolve("folder.bin"), "inside");
        DataRoot root = new DataRoot(rootDir);
        Path realDocs = corpus.toRealPath().resolve("docs");

        assertEquals(realDocs, root.dataset("corpus/docs", "f"));
        assertEquals(realDocs, root.dataset("alias/docs", "f"), "a linked directory inside: its real prefix");
        assertEquals(realDocs, root.dataset("linked", "f"), "linked files inside: the real prefix the job opens");
        assertEquals(realDocs, root.dataset(realDocs.toString(), "f"), "an absolute prefix inside");

        for (String leak : List.of("leak", "leakbin")) {
            String message = refusedDataset(root, leak);
            assertTrue(message.contains("outside the data root"), message);
            assertFalse(message.contains("secret") || message.contains("SECRET") || message.contains(outside.toString()),
                    "the error names neither the link's target nor its bytes: " + message);
        }
        assertTrue(refusedDataset(root, "mixed").contains("not one prefix's pair"));
        assertTrue(refusedDataset(root, "dangling").contains("dangling.idx not found"));
        assertTrue(refusedDataset(root, "half").contains("half.bin not found"));
        assertTrue(refusedDataset(root, "missing").contains("missing.idx not found"));
        assertTrue(refusedDataset(root, "folder").contains("folder.idx is not a regular file"));
        assertTrue(refusedDataset(root, ".").contains("the data root itself"));
        assertTrue(refusedDataset(root, "../outside/secret").contains("leaves the data root"));
        assertTrue(refusedDataset(root, outside.resolve("secret").toString()).contains("leaves the data root"));
    }

    @Test
    void theRootMustBeADirectory() {
        assertThrows(IllegalArgumentException.class, () -> new DataRoot(temp.resolve("missing")));
    }
}
