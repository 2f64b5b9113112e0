package io.kdapack.core.io;

import java.io.IOException;

/** A safetensors file that cannot be read: the message names the file, the field and what was wrong. */
public class SafeTensorsException extends IOException {
    public SafeTensorsException(String message) {
        super(message);
    }
}
