package io.kdapack.cli;

import io.kdapack.core.conv.ShortConv;
import io.kdapack.core.conv.ShortConvFiles;
import io.kdapack.core.conv.ShortConvGradients;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.conv.ShortConvOutputs;
import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kdapack op conv --in CASE --out OUT [--dtype f32|f64]}: runs the short convolution forward and backward
 * (loss {@code Σ y·dy}) on a golden-format case and writes {@code y, final_state, dx, dweight, dbias,
 * dinitial_state} under the golden names.
 */
@Command(name = "conv", mixinStandardHelpOptions = true,
        description = "Short convolution forward and backward on a golden-format case file.")
final class ConvOpCommand implements Callable<Integer> {

    @Option(names = "--in", required = true, paramLabel = "CASE", description = "input case (.safetensors)")
    Path in;

    @Option(names = "--out", required = true, paramLabel = "OUT", description = "output file (.safetensors)")
    Path out;

    @Option(names = "--dtype", defaultValue = "f64", paramLabel = "f32|f64",
            description = "dtype of the written tensors (default: ${DEFAULT-VALUE})")
    String dtype;

    @Override
    public Integer call() throws IOException {
        DType outputType = switch (dtype) {
            case "f32" -> DType.F32;
            case "f64" -> DType.F64;
            default -> throw new IllegalArgumentException("--dtype must be f32 or f64, got " + dtype);
        };
        SafeTensors file = SafeTensors.read(in);
        ShortConvInputs inputs = ShortConvFiles.inputs(file);
        float[] dy = ShortConvFiles.upstreamGradient(file);
        ShortConvOutputs outputs = ShortConv.forward(inputs);
        ShortConvGradients grads = ShortConv.backward(inputs, dy, null);
        ShortConvFiles.results(inputs, outputs, grads, outputType).write(out);
        return 0;
    }
}
