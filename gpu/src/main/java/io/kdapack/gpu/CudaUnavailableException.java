package io.kdapack.gpu;

/** No usable CUDA driver or device: the message says which (library missing, no device, driver too old…). */
public final class CudaUnavailableException extends RuntimeException {

    public CudaUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
