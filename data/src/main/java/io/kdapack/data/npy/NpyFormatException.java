package io.kdapack.data.npy;

import java.io.IOException;

/** A {@code .npy} file that cannot be read: the message names the file, the field and what was wrong. */
public class NpyFormatException extends IOException {
    public NpyFormatException(String message) {
        super(message);
    }
}
