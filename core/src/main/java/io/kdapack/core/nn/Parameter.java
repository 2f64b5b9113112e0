package io.kdapack.core.nn;

import io.kdapack.core.optim.NamedParameter;
import java.util.Arrays;
import java.util.Random;

/**
 * A trainable tensor: its full name (Hugging Face style, {@code "mlp.gate_proj.weight"}), row-major shape, fp32
 * values and a gradient buffer of the same size that backward passes add into. It is the optimizer's
 * {@link NamedParameter}, so layers' parameters go to AdamW, clipping and checkpoints as they are.
 *
 * @param name   dotted name; a model prefixes it with {@code model.layers.{i}.} by building its layers with that prefix
 * @param shape  dimensions, row-major (a Linear weight is {@code [out, in]} as in PyTorch)
 * @param values parameter values (fp32 master weights)
 * @param grads  accumulated gradient; {@link #zeroGrad()} clears it
 */
public record Parameter(String name, int[] shape, float[] values, float[] grads) implements NamedParameter {
    /** Floats per task when zeroing a gradient (128 KiB). */
    private static final int ZERO_BLOCK = 1 << 15;

    public Parameter {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("parameter name must not be empty, got " + name);
        }
        long size = 1;
        for (int d : shape) {
            if (d < 1) {
                throw new IllegalArgumentException("parameter '" + name + "': dimensions must be >= 1, got "
                        + Arrays.toString(shape));
            }
            size *= d;
        }
        if (values.length != size || grads.length != size) {
            throw new IllegalArgumentException("parameter '" + name + "': shape " + Arrays.toString(shape) + " needs "
                    + size + " values, got values " + values.length + " and grads " + grads.length);
        }
        shape = shape.clone();
    }

    /** A parameter filled with {@code fill} (0 for projections until initialised, 1 for norm weights). */
    public static Parameter filled(String name, float fill, int... shape) {
        int size = 1;
        for (int d : shape) {
            size = Math.multiplyExact(size, Math.max(d, 0));
        }
        float[] value = new float[size];
        Arrays.fill(value, fill);
        return new Parameter(name, shape, value, new float[size]);
    }

    /** {@code prefix.local}, or {@code local} when the prefix is empty. */
    public static String join(String prefix, String local) {
        return prefix == null || prefix.isEmpty() ? local : prefix + "." + local;
    }

    @Override
    public int[] shape() {
        return shape.clone();
    }

    public int size() {
        return values.length;
    }

    /** Sets the gradient to zero, in parallel blocks in the calling task's fork-join pool (or the common pool). */
    public void zeroGrad() {
        Parallel.forBlocks(grads.length, ZERO_BLOCK, (from, to) -> Arrays.fill(grads, from, to, 0f));
    }

    /** Fills the values with normal samples of standard deviation {@code std}. */
    public void initNormal(Random random, double std) {
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * std);
        }
    }
}
