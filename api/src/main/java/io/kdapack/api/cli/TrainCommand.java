package io.kdapack.api.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code kdapack train}: the main job. */
@Command(name = "train", mixinStandardHelpOptions = true, description = "Train the hybrid KDA model.")
final class TrainCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        System.err.println("kdapack train: the training loop is not built yet (issue 4); the op, data and bench "
                + "commands work today: kdapack --help");
        return 1;
    }
}
