package io.kdapack.core.conv;

import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import java.util.Arrays;

/**
 * Short-convolution cases in the golden safetensors format ({@code golden/README.md}, "Short convolution"):
 * inputs {@code x [1,T,D], weight [D,W], bias [D]?, initial_state [N,D,W]?, cu_seqlens [N+1], dy [1,T,D]}
 * and metadata {@code activation}; results {@code y, final_state, dx, dweight, dbias, dinitial_state}.
 * Shapes are taken from the tensors and checked against each other; any mismatch is an
 * {@link IllegalArgumentException} naming the tensor.
 */
public final class ShortConvFiles {

    private ShortConvFiles() {
    }

    /** The op inputs of a case file. */
    public static ShortConvInputs inputs(SafeTensors file) {
        Tensor x = floatTensor(file, "x");
        if (x.rank() != 3 || x.dim(0) != 1) {
            throw new IllegalArgumentException("tensor 'x' must have shape [1,T,D], got " + Arrays.toString(x.shape()));
        }
        int tokens = Math.toIntExact(x.dim(1));
        int channels = Math.toIntExact(x.dim(2));
        Tensor weight = floatTensor(file, "weight");
        if (weight.rank() != 2 || weight.dim(0) != channels) {
            throw new IllegalArgumentException("tensor 'weight' must have shape [D,W] with D = " + channels
                    + ", got " + Arrays.toString(weight.shape()));
        }
        int width = Math.toIntExact(weight.dim(1));
        Tensor cu = file.get("cu_seqlens");
        if (cu.rank() != 1 || (cu.dtype() != DType.I32 && cu.dtype() != DType.I64)) {
            throw new IllegalArgumentException("tensor 'cu_seqlens' must be an I32 or I64 vector [N+1], got "
                    + cu.dtype() + " " + Arrays.toString(cu.shape()));
        }
        Segments segments = Varlen.fromCuSeqlens(cu.toIntArray(), tokens);
        float[] bias = file.has("bias") ? shaped(file, "bias", channels).toFloatArray() : null;
        float[] initial = file.has("initial_state")
                ? shaped(file, "initial_state", segments.count(), channels, width).toFloatArray() : null;
        return new ShortConvInputs(segments, channels, width, x.toFloatArray(), weight.toFloatArray(), bias, initial,
                Activation.parse(file.meta("activation")));
    }

    /** The upstream gradient {@code dy [T,D]} of a case file. */
    public static float[] upstreamGradient(SafeTensors file) {
        Tensor x = file.get("x");
        return shaped(file, "dy", x.shape()).toFloatArray();
    }

    /** Outputs and gradients under the golden names, stored as {@code dtype} (F32 or F64). */
    public static SafeTensors results(ShortConvInputs in, ShortConvOutputs out, ShortConvGradients grads,
                                      DType dtype) {
        long t = in.tokens();
        long n = in.sequences();
        long d = in.channels();
        long w = in.width();
        SafeTensors.Builder b = SafeTensors.builder()
                .meta("kind", "short_conv")
                .meta("activation", in.activation().name().toLowerCase(java.util.Locale.ROOT))
                .put(Tensor.ofFloats("y", out.y(), dtype, 1, t, d))
                .put(Tensor.ofFloats("final_state", out.finalState(), dtype, n, d, w))
                .put(Tensor.ofFloats("dx", grads.dx(), dtype, 1, t, d))
                .put(Tensor.ofFloats("dweight", grads.dweight(), dtype, d, w));
        if (grads.dbias() != null) {
            b.put(Tensor.ofFloats("dbias", grads.dbias(), dtype, d));
        }
        if (grads.dinitialState() != null) {
            b.put(Tensor.ofFloats("dinitial_state", grads.dinitialState(), dtype, n, d, w));
        }
        return b.build();
    }

    /** The float tensor {@code name}, which must have exactly {@code shape}. */
    private static Tensor shaped(SafeTensors file, String name, long... shape) {
        Tensor t = floatTensor(file, name);
        if (!Arrays.equals(t.shape(), shape)) {
            throw new IllegalArgumentException("tensor '" + name + "' must have shape " + Arrays.toString(shape)
                    + ", got " + Arrays.toString(t.shape()));
        }
        return t;
    }

    private static Tensor floatTensor(SafeTensors file, String name) {
        Tensor t = file.get(name);
        return switch (t.dtype()) {
            case F32, F64, F16, BF16 -> t;
            default -> throw new IllegalArgumentException("tensor '" + name + "' must be a float tensor, got "
                    + t.dtype());
        };
    }
}
