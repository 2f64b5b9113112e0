package io.kdapack.gpu;

import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaChunked;
import java.util.Locale;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The backend switch {@code auto|cpu|cuda} of config and CLI. {@code cuda} opens GPU 0 on the calling thread
 * (call it from the thread that will run the op: the KDA-layer actor's pinned thread) and fails with the
 * reason when there is none; {@code auto} does the same but falls back to the CPU with one log line.
 */
public final class Backends {

    private static final Logger LOG = LoggerFactory.getLogger(Backends.class);

    /** The accepted values of the switch. */
    public enum Choice {
        AUTO, CPU, CUDA;

        public static Choice parse(String value) {
            if (value != null) {
                for (Choice c : values()) {
                    if (c.name().equalsIgnoreCase(value.strip())) {
                        return c;
                    }
                }
            }
            throw new IllegalArgumentException("backend must be one of auto, cpu, cuda; got '" + value + "'");
        }

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private Backends() {
    }

    /** {@link #select(String, Supplier)} with core's chunked CPU backend. */
    public static KdaBackend select(String choice) {
        return select(choice, KdaChunked::new);
    }

    /**
     * @param choice "auto", "cpu" or "cuda"
     * @param cpu    the CPU backend (from core), created only when it is chosen
     */
    public static KdaBackend select(String choice, Supplier<KdaBackend> cpu) {
        return switch (Choice.parse(choice)) {
            case CPU -> cpu.get();
            case CUDA -> new CudaKdaBackend(openOrFail());
            case AUTO -> {
                String reason = CudaDevice.unavailableReason();
                if (reason != null) {
                    KdaBackend fallback = cpu.get();
                    LOG.info("KDA backend auto: {}; using the CPU backend ({})", reason, fallback.name());
                    yield fallback;
                }
                yield new CudaKdaBackend(CudaDevice.open(0));
            }
        };
    }

    private static CudaDevice openOrFail() {
        String reason = CudaDevice.unavailableReason();
        if (reason != null) {
            throw new IllegalStateException("backend cuda requested but " + reason
                    + " (use --backend cpu or auto on machines without a GPU)");
        }
        return CudaDevice.open(0);
    }
}
