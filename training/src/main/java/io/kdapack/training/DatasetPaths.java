package io.kdapack.training;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where the demo dataset lives and how a configured dataset path resolves.
 *
 * <p>The demo dataset ships in the repository under {@code datasets/mqar/}: {@code mqar-train.bin/.idx} (training) and
 * {@code mqar-heldout.bin/.idx} (documents the model never trains on, for the recall eval). The repository root is
 * the system property {@value #HOME_PROPERTY}, which the {@code ./kdapack} launcher sets to its own directory, else the
 * working directory. A configured {@code train.data.prefix} that is relative resolves against the working directory
 * (like any path given on the command line); {@code null} means the shipped training set.
 */
public final class DatasetPaths {
    /** System property naming the repository root; set by the launcher. */
    public static final String HOME_PROPERTY = "kdapack.home";
    /** The demo dataset's directory, relative to the repository root. */
    public static final String DEMO_DIRECTORY = "datasets/mqar";
    /** Prefix name of the demo training set. */
    public static final String DEMO_TRAIN = "mqar-train";
    /** Prefix name of the demo held-out set. */
    public static final String DEMO_HELDOUT = "mqar-heldout";

    private DatasetPaths() {
    }

    /** The repository root: {@value #HOME_PROPERTY} when set, else the working directory. */
    public static Path home() {
        String home = System.getProperty(HOME_PROPERTY);
        return Path.of(home == null || home.isBlank() ? "" : home).toAbsolutePath().normalize();
    }

    /** The training prefix for {@code configured} ({@code train.data.prefix}, may be null). */
    public static Path trainPrefix(String configured) {
        return configured == null ? home().resolve(DEMO_DIRECTORY).resolve(DEMO_TRAIN)
                : Path.of(configured).toAbsolutePath().normalize();
    }

    /**
     * The held-out prefix that goes with a training prefix: {@code X-heldout} beside {@code X-train}, when that file
     * pair exists; empty otherwise.
     */
    public static Optional<Path> heldOutPrefix(Path trainPrefix) {
        String name = trainPrefix.getFileName().toString();
        if (!name.endsWith("-train")) {
            return Optional.empty();
        }
        Path heldOut = trainPrefix.resolveSibling(name.substring(0, name.length() - "-train".length()) + "-heldout");
        return Files.isRegularFile(heldOut.resolveSibling(heldOut.getFileName() + ".idx")) ? Optional.of(heldOut)
                : Optional.empty();
    }
}
