package io.kdapack.data;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.testkit.Golden;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/** The Megatron golden files of the shared test library ({@link Golden}), read as safetensors. */
public final class GoldenFiles {
    private GoldenFiles() {
    }

    /** {@code golden/<relative>} from the shared test library, as a file path. */
    public static Path path(String relative) {
        return Golden.path(relative);
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
