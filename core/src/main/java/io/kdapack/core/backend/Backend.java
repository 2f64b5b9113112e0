package io.kdapack.core.backend;

import java.util.Locale;

/**
 * Where the KDA op and the short convolutions compute: {@code train.backend} in configuration and {@code --backend}
 * on the command line, one enum for both.
 */
public enum Backend {
    /** CUDA when a usable GPU and the {@code gpu} module are found, the chunked CPU kernels otherwise (one log line). */
    AUTO,
    /** The chunked CPU kernels. */
    CPU,
    /** The CUDA kernels; failing to find a GPU is an error. */
    CUDA,
    /** The token-by-token recurrence ({@code KdaRecurrent}): the reference the fast paths are checked against. */
    REFERENCE;

    /** Parses {@code auto|cpu|cuda|reference}, case-insensitively; the error names the accepted values. */
    public static Backend parse(String value) {
        if (value != null) {
            for (Backend b : values()) {
                if (b.name().equalsIgnoreCase(value.strip())) {
                    return b;
                }
            }
        }
        throw new IllegalArgumentException("backend must be one of auto, cpu, cuda, reference; got '" + value + "'");
    }

    /** The lower-case name the configuration and the command line use. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
