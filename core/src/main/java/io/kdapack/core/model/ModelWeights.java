package io.kdapack.core.model;

import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.nn.Parameter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** A model's parameters to and from safetensors, one F32 tensor per parameter under its Hugging Face name. */
public final class ModelWeights {
    private static final int LISTED = 8;
    private static final Set<DType> FLOAT_TYPES = EnumSet.of(DType.F32, DType.F64, DType.F16, DType.BF16);

    private ModelWeights() {
    }

    /** The parameters' values as F32 tensors with their shapes, in parameter order. */
    public static SafeTensors toSafeTensors(List<Parameter> parameters) {
        SafeTensors.Builder builder = SafeTensors.builder().meta("format", "pt");
        for (Parameter p : parameters) {
            builder.put(Tensor.of(p.name(), p.values(), toLong(p.shape())));
        }
        return builder.build();
    }

    /** Gradients as F32 tensors named {@code prefix + name}, e.g. {@code grad.lm_head.weight}. */
    public static SafeTensors.Builder putGradients(SafeTensors.Builder builder, List<Parameter> parameters,
                                                   String prefix) {
        for (Parameter p : parameters) {
            builder.put(Tensor.of(prefix + p.name(), p.grads(), toLong(p.shape())));
        }
        return builder;
    }

    /**
     * Copies the tensors of {@code file} into the parameters (any float dtype, converted to fp32). The names must
     * match one to one, every shape exactly, every dtype be a float one; otherwise nothing is changed and the
     * exception lists the missing, unexpected and mis-shaped names.
     */
    public static void load(List<Parameter> parameters, SafeTensors file) {
        Set<String> extra = new LinkedHashSet<>(file.tensors().keySet());
        List<String> missing = new ArrayList<>();
        List<String> misShaped = new ArrayList<>();
        for (Parameter p : parameters) {
            extra.remove(p.name());
            if (!file.has(p.name())) {
                missing.add(p.name());
                continue;
            }
            Tensor t = file.get(p.name());
            if (!Arrays.equals(t.shape(), toLong(p.shape()))) {
                misShaped.add(p.name() + " " + Arrays.toString(t.shape()) + " (expected " + Arrays.toString(p.shape())
                        + ")");
            } else if (!FLOAT_TYPES.contains(t.dtype())) {
                misShaped.add(p.name() + " of dtype " + t.dtype() + " (expected a float dtype)");
            }
        }
        if (!missing.isEmpty() || !extra.isEmpty() || !misShaped.isEmpty()) {
            StringBuilder message = new StringBuilder("weights do not match the model:");
            describe(message, "missing", missing);
            describe(message, "unexpected", new ArrayList<>(extra));
            describe(message, "wrong shape or dtype", misShaped);
            throw new IllegalArgumentException(message.toString());
        }
        for (Parameter p : parameters) {
            float[] values = file.get(p.name()).toFloatArray();
            System.arraycopy(values, 0, p.values(), 0, values.length);
        }
    }

    private static void describe(StringBuilder message, String what, List<String> names) {
        if (names.isEmpty()) {
            return;
        }
        message.append(' ').append(names.size()).append(' ').append(what).append(' ')
                .append(names.subList(0, Math.min(LISTED, names.size())));
        if (names.size() > LISTED) {
            message.append(" …");
        }
        message.append(';');
    }

    private static long[] toLong(int[] shape) {
        return Arrays.stream(shape).asLongStream().toArray();
    }
}
