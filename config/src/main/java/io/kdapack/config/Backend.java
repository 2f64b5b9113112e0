package io.kdapack.config;

/** Where the model computes ({@code train.backend}). */
public enum Backend {
    /** CUDA when a usable GPU is found, CPU otherwise (with a log line saying why). */
    AUTO,
    /** The CPU kernels. */
    CPU,
    /** The CUDA kernels; failing to find a GPU is an error. */
    CUDA
}
