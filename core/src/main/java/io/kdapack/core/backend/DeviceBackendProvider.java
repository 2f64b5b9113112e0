package io.kdapack.core.backend;

import io.kdapack.core.kda.KdaBackend;

/**
 * The seam through which a device backend plugs into core: the {@code gpu} module registers one in
 * {@code META-INF/services/io.kdapack.core.backend.DeviceBackendProvider}, and {@link Backends} finds it with
 * {@link java.util.ServiceLoader} at run time, so nothing that builds a model needs a compile-time dependency on it.
 */
public interface DeviceBackendProvider {

    /** Why the device cannot be used on this machine, or null when it can. */
    String unavailableReason();

    /**
     * Opens the device on the calling thread (a GPU context is bound to one thread: call it from the thread that
     * will run the op) and returns its KDA backend.
     *
     * @throws IllegalStateException when the device cannot be opened
     */
    KdaBackend openKda();
}
