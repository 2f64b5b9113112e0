package io.kdapack.gpu;

import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;

/** Argument checks of the KDA op before anything reaches the device: wrong sizes fail here, by name. */
final class KdaShapes {

    private KdaShapes() {
    }

    static void validate(KdaInputs in, KdaOptions options) {
        if (in == null || options == null) {
            throw new IllegalArgumentException("inputs and options must not be null");
        }
        long t = in.tokens();
        int h = in.heads();
        int hv = in.valueHeads();
        int k = in.keyDim();
        int v = in.valueDim();
        int n = in.sequences();
        if (h < 1 || hv % h != 0 || hv < h) {
            throw new IllegalArgumentException("valueHeads must be a positive multiple of heads, got H=" + h + " HV=" + hv);
        }
        if (k > KdaLaunchPlan.MAX_KEY_DIM || k < 1 || v < 1) {
            throw new IllegalArgumentException("keyDim must be in [1, " + KdaLaunchPlan.MAX_KEY_DIM
                    + "] and valueDim >= 1 on CUDA, got K=" + k + " V=" + v);
        }
        require("q", in.q(), t * h * k);
        require("k", in.k(), t * h * k);
        require("v", in.v(), t * hv * v);
        require("g", in.g(), t * hv * k);
        require("beta", in.beta(), t * hv);
        if (options.gate() != KdaOptions.Gate.NONE) {
            require("dtBias", in.dtBias(), (long) hv * k);
            if (in.aLog() != null) {
                require("aLog", in.aLog(), hv);
            }
        } else if (in.aLog() != null || in.dtBias() != null) {
            throw new IllegalArgumentException("aLog and dtBias are only used with a gate in the op (gate is NONE)");
        }
        if (in.h0() != null) {
            require("h0", in.h0(), (long) n * hv * k * v);
        }
        int previousEnd = 0;
        for (int s = 0; s < n; s++) {
            int start = in.segments().start(s);
            int end = in.segments().end(s);
            if (start < previousEnd || end < start || end > t) {
                throw new IllegalArgumentException("segment " + s + " [" + start + ", " + end
                        + ") is out of order, negative or beyond T=" + t);
            }
            previousEnd = end;
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
