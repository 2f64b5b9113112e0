package io.kdapack.gpu;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.core.kda.Segments;

/**
 * A golden KDA or conv file (core/src/test/resources/golden, README there) turned into op inputs. The batched
 * layout's {@code [B,T]} rows are flattened to {@code B·T} tokens with segments from {@code seg_bounds}.
 */
record GoldenKda(KdaInputs inputs, KdaOptions options) {

    static GoldenKda from(SafeTensors f) {
        int b = Integer.parseInt(f.meta("B"));
        int rowTokens = Integer.parseInt(f.meta("T"));
        Segments segments;
        if (f.has("cu_seqlens")) {
            segments = fromCuSeqlens(b * rowTokens, f.get("cu_seqlens").toIntArray());
        } else {
            int[] bounds = f.get("seg_bounds").toIntArray();
            int n = bounds.length / 3;
            int[] starts = new int[n];
            int[] ends = new int[n];
            for (int s = 0; s < n; s++) {
                starts[s] = bounds[3 * s] * rowTokens + bounds[3 * s + 1];
                ends[s] = bounds[3 * s] * rowTokens + bounds[3 * s + 2];
            }
            segments = new Segments(b * rowTokens, starts, ends);
        }
        KdaOptions.Gate gate = KdaOptions.Gate.NONE;
        float lowerBound = 0f;
        if (Boolean.parseBoolean(f.meta("use_gate_in_kernel"))) {
            String lb = f.meta("lower_bound");
            if (lb.equals("none")) {
                gate = KdaOptions.Gate.SOFTPLUS;
            } else {
                gate = KdaOptions.Gate.LOWER_BOUND;
                lowerBound = Float.parseFloat(lb);
            }
        }
        KdaOptions options = new KdaOptions(Float.parseFloat(f.meta("scale")),
                Boolean.parseBoolean(f.meta("use_qk_l2norm_in_kernel")), gate, lowerBound,
                Boolean.parseBoolean(f.meta("use_beta_sigmoid_in_kernel")));
        KdaInputs in = new KdaInputs(segments, Integer.parseInt(f.meta("H")), Integer.parseInt(f.meta("HV")),
                Integer.parseInt(f.meta("K")), Integer.parseInt(f.meta("V")), floats(f, "q"), floats(f, "k"),
                floats(f, "v"), floats(f, "g"), floats(f, "beta"), floats(f, "A_log"), floats(f, "dt_bias"),
                floats(f, "h0"));
        return new GoldenKda(in, options);
    }

    static ShortConvInputs conv(SafeTensors f) {
        int t = Integer.parseInt(f.meta("T"));
        return new ShortConvInputs(fromCuSeqlens(t, f.get("cu_seqlens").toIntArray()), Integer.parseInt(f.meta("D")),
                Integer.parseInt(f.meta("W")), floats(f, "x"), floats(f, "weight"), floats(f, "bias"),
                floats(f, "initial_state"), f.meta("activation").equals("silu"));
    }

    static Segments fromCuSeqlens(int tokens, int[] cu) {
        int n = cu.length - 1;
        int[] starts = new int[n];
        int[] ends = new int[n];
        for (int s = 0; s < n; s++) {
            starts[s] = cu[s];
            ends[s] = cu[s + 1];
        }
        return new Segments(tokens, starts, ends);
    }

    private static float[] floats(SafeTensors f, String name) {
        return f.has(name) ? f.get(name).toFloatArray() : null;
    }
}
