package io.kdapack.cli.kda;

import io.kdapack.cli.ThreadsOption;
import io.kdapack.core.backend.Backend;
import io.kdapack.core.backend.Backends;
import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaCase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kdapack op kda --in CASE --out OUT}: runs the KDA op forward and backward on the inputs and
 * flags of a golden-format file (either layout) and writes {@code o, ht, dq, dk, dv, dg, dbeta} and, where
 * they apply, {@code dh0, dA_log, ddt_bias} under the golden names and shapes.
 */
@Command(name = "kda", mixinStandardHelpOptions = true,
        description = "Run Kimi Delta Attention (forward and backward) on a golden-format safetensors file.")
public final class KdaOpCommand implements Callable<Integer> {

    /** Stored dtype of the results. */
    public enum OutputType { f32, f64 }

    @Option(names = "--in", required = true, paramLabel = "CASE.safetensors", description = "Inputs and flags.")
    Path in;

    @Option(names = "--out", required = true, paramLabel = "OUT.safetensors", description = "Written atomically.")
    Path out;

    @Option(names = "--dtype", defaultValue = "f64", description = "Result dtype: ${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}).")
    OutputType dtype;

    @Option(names = "--backend", defaultValue = "auto",
            description = "auto (CUDA when a GPU is present, else CPU), cpu (chunked), cuda, or reference "
                    + "(token-by-token recurrence); default ${DEFAULT-VALUE}.")
    Backend backend;

    @Mixin
    ThreadsOption threads;

    @Override
    public Integer call() throws IOException {
        if (!Files.isRegularFile(in)) {
            throw new IllegalArgumentException("--in " + in + ": no such file");
        }
        KdaCase c = KdaCase.from(SafeTensors.read(in));
        KdaBackend op = Backends.select(backend, threads.count());
        KdaBackend.KdaResult result = op.forward(c.inputs(), c.options());
        KdaBackend.KdaGradients grads = op.backward(c.inputs(), c.options(), c.dO(), c.dHt());
        c.results(result, grads, dtype == OutputType.f32 ? DType.F32 : DType.F64).write(out);
        System.out.println("kdapack op kda: " + op.name() + ", " + c.inputs().sequences() + " sequences, "
                + c.inputs().tokens() + " tokens -> " + out);
        return 0;
    }
}
