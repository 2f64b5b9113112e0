package io.kdapack.data;

import io.kdapack.core.io.SafeTensors;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Path;

/** Locates the golden reference files copied into the test resources. */
public final class GoldenFiles {
    private GoldenFiles() {
    }

    /** {@code golden/<relative>} on the test class path, as a file path. */
    public static Path path(String relative) {
        URL url = GoldenFiles.class.getResource("/golden/" + relative);
        if (url == null) {
            throw new IllegalStateException("missing test resource golden/" + relative);
        }
        try {
            return Path.of(url.toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Reads {@code golden/<relative>} as safetensors. */
    public static SafeTensors read(String relative) {
        try {
            return SafeTensors.read(path(relative));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
