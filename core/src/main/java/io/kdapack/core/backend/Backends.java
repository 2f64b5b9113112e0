package io.kdapack.core.backend;

import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaRecurrent;
import java.lang.System.Logger.Level;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Picks the {@link KdaBackend} of a {@link Backend} choice. {@code cuda} asks the {@link DeviceBackendProvider} found on
 * the class path and fails with the reason when there is none or it cannot be used; {@code auto} does the same but
 * falls back to the chunked CPU kernels with one log line saying why.
 */
public final class Backends {

    private static final System.Logger LOG = System.getLogger(Backends.class.getName());

    private Backends() {
    }

    /**
     * @param choice  where to compute
     * @param threads worker threads of the CPU kernels (they are created only when chosen)
     */
    public static KdaBackend select(Backend choice, int threads) {
        return switch (choice) {
            case CPU -> new KdaChunked(threads);
            case REFERENCE -> new KdaRecurrent(threads);
            case CUDA -> {
                DeviceBackendProvider device = device().orElseThrow(() -> new IllegalStateException(
                        "backend cuda requested but the gpu module is not on the class path"));
                String reason = device.unavailableReason();
                if (reason != null) {
                    throw new IllegalStateException("backend cuda requested but " + reason
                            + " (use backend cpu or auto on machines without a GPU)");
                }
                yield device.openKda();
            }
            case AUTO -> {
                Optional<DeviceBackendProvider> device = device();
                String reason = device.map(DeviceBackendProvider::unavailableReason)
                        .orElse("the gpu module is not on the class path");
                if (reason == null) {
                    yield device.get().openKda();
                }
                KdaBackend cpu = new KdaChunked(threads);
                LOG.log(Level.INFO, "KDA backend auto: {0}; using the CPU backend ({1})", reason, cpu.name());
                yield cpu;
            }
        };
    }

    private static Optional<DeviceBackendProvider> device() {
        return ServiceLoader.load(DeviceBackendProvider.class).findFirst();
    }
}
