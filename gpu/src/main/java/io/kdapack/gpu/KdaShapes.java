package io.kdapack.gpu;

import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;

/** Argument checks before anything reaches the device: the op contract's, plus the kernels' own limits. */
final class KdaShapes {

    private KdaShapes() {
    }

    static void validate(KdaInputs in, KdaOptions options) {
        if (in == null || options == null) {
            throw new IllegalArgumentException("inputs and options must not be null");
        }
        in.validate(options);
        if (in.keyDim() > KdaLaunchPlan.MAX_KEY_DIM) {
            throw new IllegalArgumentException("keyDim K must be <= " + KdaLaunchPlan.MAX_KEY_DIM
                    + " on CUDA, got " + in.keyDim());
        }
    }

    static void require(String name, float[] array, long expected) {
        if (array == null) {
            throw new IllegalArgumentException(name + " must not be null (expected " + expected + " values)");
        }
        if (array.length != expected) {
            throw new IllegalArgumentException(name + " has " + array.length + " values, expected " + expected);
        }
    }
}
