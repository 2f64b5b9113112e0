package io.kdapack.core.optim;

/**
 * A trainable tensor as the optimizer, gradient clipping and checkpoints see it: a name (Hugging Face style,
 * e.g. {@code model.layers.0.self_attn.A_log}), a row-major shape, the fp32 master values and the gradient
 * accumulated for them. Both arrays are owned by the model and updated in place; they have
 * {@code product(shape)} elements. {@code io.kdapack.core.nn.Parameter} implements it.
 */
public interface NamedParameter {

    String name();

    int[] shape();

    /** fp32 master weights, updated in place by the optimizer. */
    float[] values();

    /** Accumulated gradient, same length as {@link #values()}. */
    float[] grads();

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
        if (p.values().length != n || p.grads().length != n) {
            throw new IllegalArgumentException("parameter '" + p.name() + "': " + p.values().length + " values and "
                    + p.grads().length + " grads for shape " + java.util.Arrays.toString(p.shape()) + " (" + n + " elements)");
        }
        return (int) n;
    }
}
