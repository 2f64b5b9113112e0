package io.kdapack.actors.cluster.parallel;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * The Artery settings gradient chunks need, for the actor system of every worker member: the rank runners' chunk
 * receivers ({@code …/kdapack-gradients}, up to five levels below {@code /user} or {@code /system}, where a
 * cluster worker's agent spawns them) are large-message destinations, so
 * chunks travel on Artery's separate large-message lane (and do not hold up membership and control messages on the
 * ordinary one), in frames of up to {@code maximum-large-frame-size}. A list in configuration is replaced, not merged,
 * so this cannot live in {@code reference.conf}: a node's configuration takes it with {@code withFallback}.
 */
public final class ParallelTransport {

    private ParallelTransport() {
    }

    /** The large-message destination patterns of the chunk receivers. */
    public static List<String> largeMessageDestinations() {
        List<String> out = new ArrayList<>();
        for (String root : List.of("/user", "/system")) {
            StringBuilder path = new StringBuilder(root);
            for (int depth = 1; depth <= 5; depth++) {
                path.append("/*");
                out.add(path + "/" + RankRunner.GRADIENTS);
            }
        }
        return out;
    }

    /**
     * {@code pekko.remote.artery.large-message-destinations} (the patterns above) and a large frame of
     * {@code chunkBytes + 64 KiB} (header room), at least Artery's default 2 MiB.
     */
    public static Config artery(long chunkBytes) {
        long frame = Math.max(2L << 20, chunkBytes + (64L << 10));
        StringBuilder destinations = new StringBuilder();
        for (String d : largeMessageDestinations()) {
            destinations.append(destinations.isEmpty() ? "" : ", ").append('"').append(d).append('"');
        }
        return ConfigFactory.parseString("pekko.remote.artery.large-message-destinations = [" + destinations + "]\n"
                + "pekko.remote.artery.advanced.maximum-large-frame-size = " + frame + "\n");
    }
}
