package io.kdapack.core.optim;

/**
 * A trainable tensor as the optimizer, gradient clipping and checkpoints see it: a name (Hugging Face style,
 * e.g. {@code model.layers.0.self_attn.A_log}), a row-major shape, the fp32 master values and the gradient
 * accumulated for them. Both arrays are owned by the model and updated in place; they have
 * {@code product(shape)} elements. The accessor names are those of {@code io.kdapack.core.nn.Parameter}
 * ({@code name, shape, value, grad}), so that record implements this interface by declaring it.
 */
public interface NamedParameter {

    String name();

    int[] shape();

    /** fp32 master weights, updated in place by the optimizer. */
    float[] value();

    /** Accumulated gradient, same length as {@link #value()}. */
    float[] grad();

    /** Checks the parameter's arrays against its shape; returns the element count. */
    static int checkedSize(NamedParameter p) {
        long n = 1;
        for (int d : p.shape()) {
            if (d < 0) {
                throw new IllegalArgumentException("parameter '" + p.name() + "': negative dimension in shape "
                        + java.util.Arrays.toString(p.shape()));
            }
            n *= d;
        }
        if (p.value().length != n || p.grad().length != n) {
            throw new IllegalArgumentException("parameter '" + p.name() + "': " + p.value().length + " values and "
                    + p.grad().length + " grads for shape " + java.util.Arrays.toString(p.shape()) + " (" + n + " elements)");
        }
        return (int) n;
    }
}
