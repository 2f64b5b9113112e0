package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
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
    }

    @Test
    void theRootMustBeADirectory() {
        assertThrows(IllegalArgumentException.class, () -> new DataRoot(temp.resolve("missing")));
    }
}
