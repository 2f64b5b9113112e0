package io.kdapack.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The golden fixtures, one copy for every module's tests: this library's resources under {@code golden/}, laid out as
 * the reference set they were copied from ({@code kda/}, {@code conv/}, {@code megatron/}, {@code rng/}; see
 * {@code golden/README.md}). A fresh clone tests on its own.
 *
 * <p>Tests get plain file paths (the command-line tests pass them as arguments): when the library is a jar on the
 * class path, as in a reactor build, its {@code golden/} tree is unpacked once per JVM into a temporary directory that
 * is removed at exit.
 */
public final class Golden {

    private static Path unpacked;

    private Golden() {
    }

    /**
     * @param relative a path under {@code golden/}, e.g. {@code kda/03_chunk_edges_gva.safetensors}, or "" for the root
     * @throws AssertionError when the fixture is missing
     */
    public static Path path(String relative) {
        Path file = root().resolve(relative);
        if (!Files.exists(file)) {
            throw new AssertionError("missing golden fixture golden/" + relative);
        }
        return file;
    }

    private static synchronized Path root() {
        if (unpacked != null) {
            return unpacked;
        }
        URL url = Golden.class.getResource("/golden/README.md");
        if (url == null) {
            throw new AssertionError("the golden fixtures are not on the class path");
        }
        try {
            URI uri = url.toURI();
            if (uri.getScheme().equals("file")) {
                unpacked = Path.of(uri).getParent();
            } else {
                unpacked = unpack(uri);
            }
            return unpacked;
        } catch (URISyntaxException | IOException e) {
            throw new AssertionError("golden fixtures: " + e.getMessage(), e);
        }
    }

    private static Path unpack(URI inJar) throws IOException {
        Path target = Files.createTempDirectory("kdapack-golden");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(target)));
        try (FileSystem jar = FileSystems.newFileSystem(inJar, Map.of())) {
            Path source = jar.getPath("/golden");
            List<Path> entries;
            try (Stream<Path> walk = Files.walk(source)) {
                entries = walk.toList();
            }
            for (Path entry : entries) {
                Path copy = target.resolve(source.relativize(entry).toString());
                if (Files.isDirectory(entry)) {
                    Files.createDirectories(copy);
                } else {
                    Files.copy(entry, copy, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        return target;
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // Best effort at exit: a leftover temporary directory is harmless.
        }
    }
}
