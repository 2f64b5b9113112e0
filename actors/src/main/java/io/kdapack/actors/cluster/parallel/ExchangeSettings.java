package io.kdapack.actors.cluster.parallel;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * How the ranks of a data-parallel job move gradients ({@code kdapack.parallel} in the actors module's
 * {@code reference.conf}).
 *
 * @param chunkFloats gradient floats per chunk message ({@code chunk-bytes / 4}); a chunk must fit Artery's large-message
 *                    frame ({@code pekko.remote.artery.advanced.maximum-large-frame-size}, 2 MiB by default) with its
 *                    32-byte header
 * @param window      chunks a rank may have sent on one link and not yet seen acknowledged: the memory a rank holds for
 *                    incoming gradients is at most {@code 2 · window · chunk-bytes} (the reduce and the broadcast link),
 *                    whatever the model size
 * @param timeout     how long a rank waits for any message of a peer it needs (a handshake, a part of an all-gather, the
 *                    next chunk) before the job fails with a reason naming that peer
 */
public record ExchangeSettings(int chunkFloats, int window, Duration timeout) {

    public ExchangeSettings {
        if (chunkFloats < 1) {
            throw new IllegalArgumentException("kdapack.parallel.chunk-bytes must be at least 4, got " + 4L * chunkFloats);
        }
        if (window < 1) {
            throw new IllegalArgumentException("kdapack.parallel.window must be >= 1, got " + window);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("kdapack.parallel.timeout must be positive, got " + timeout);
        }
    }

    /** {@code kdapack.parallel} of an actor system's configuration. */
    public static ExchangeSettings from(Config config) {
        Config c = config.getConfig("kdapack.parallel");
        long bytes = c.getBytes("chunk-bytes");
        if (bytes < 4 || bytes > Integer.MAX_VALUE || bytes % 4 != 0) {
            throw new IllegalArgumentException("kdapack.parallel.chunk-bytes: expected a multiple of 4 in [4, 2 GiB), got "
                    + bytes);
        }
        return new ExchangeSettings((int) (bytes / 4), c.getInt("window"), c.getDuration("timeout"));
    }
}
