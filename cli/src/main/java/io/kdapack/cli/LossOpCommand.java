package io.kdapack.cli;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.loss.LossOp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code kdapack op loss}: Megatron's loss reductions on a loss golden file. */
@Command(name = "loss", mixinStandardHelpOptions = true,
        description = "Cross-entropy, micro-batch reductions and logit gradients of a Megatron loss golden file "
                + "(logits, labels, loss_mask; micro_batch_size and num_microbatches in the metadata).")
final class LossOpCommand implements Callable<Integer> {

    @Option(names = "--in", required = true, paramLabel = "CASE", description = "input .safetensors (golden format)")
    Path in;

    @Option(names = "--out", required = true, paramLabel = "OUT", description = "output .safetensors, written atomically")
    Path out;

    @Override
    public Integer call() throws IOException {
        if (!Files.isRegularFile(in)) {
            throw new IllegalArgumentException("--in: no such file: " + in);
        }
        LossOp.run(SafeTensors.read(in)).write(out);
        return 0;
    }
}
