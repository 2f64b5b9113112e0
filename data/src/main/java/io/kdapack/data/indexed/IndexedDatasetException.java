package io.kdapack.data.indexed;

import java.io.IOException;

/**
 * A Megatron {@code .idx}/{@code .bin} pair that cannot be read: truncated, corrupt, foreign or inconsistent.
 * The message names the file, the field and the expected and found values.
 */
public class IndexedDatasetException extends IOException {
    public IndexedDatasetException(String message) {
        super(message);
    }
}
