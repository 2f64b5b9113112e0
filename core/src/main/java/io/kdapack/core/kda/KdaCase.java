package io.kdapack.core.kda;

import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * A KDA problem read from a golden-format safetensors file (shared/golden/README.md, KDA part): inputs,
 * flags and upstream gradients, in either layout. {@link #results} writes outputs and gradients back under
 * the golden names and shapes. Shared by the tests and {@code kdapack op kda}.
 *
 * @param layout    which varlen form the file uses
 * @param rows      B (1 for the packed layout)
 * @param rowLength T per row
 * @param inputs    the op's inputs over the flattened {@code B·T} axis
 * @param options   the flags of the file's metadata
 * @param dO        {@code [B·T,HV,V]} upstream gradient of o
 * @param dHt       {@code [N,HV,K,V]} upstream gradient of ht, or null when the file has none
 */
public record KdaCase(Layout layout, int rows, int rowLength, KdaInputs inputs, KdaOptions options,
                      float[] dO, float[] dHt) {

    /** The {@code layout} metadata values. */
    public enum Layout {
        PACKED_CU_SEQLENS, BATCHED_SEGMENT_IDS;

        String key() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Reads a case; missing or malformed tensors and metadata give an IllegalArgumentException naming them. */
    public static KdaCase from(SafeTensors file) {
        Layout layout = file.has("segment_ids") ? Layout.BATCHED_SEGMENT_IDS : Layout.PACKED_CU_SEQLENS;
        String declared = file.meta("layout", layout.key());
        if (!declared.equals(layout.key())) {
            throw new IllegalArgumentException("metadata layout = '" + declared + "' but the file "
                    + (layout == Layout.BATCHED_SEGMENT_IDS ? "has" : "lacks") + " tensor 'segment_ids'");
        }
        long[] qShape = shape(file, "q", 4);
        int rows = dim(qShape, 0);
        int rowLength = dim(qShape, 1);
        int heads = dim(qShape, 2);
        int keyDim = dim(qShape, 3);
        long[] vShape = shape(file, "v", 4);
        int valueHeads = dim(vShape, 2);
        int valueDim = dim(vShape, 3);
        if (vShape[0] != rows || vShape[1] != rowLength) {
            throw new IllegalArgumentException("tensor 'v' has shape " + Arrays.toString(vShape)
                    + ", expected [B,T,HV,V] with B=" + rows + ", T=" + rowLength + " as in 'q'");
        }
        int tokens = Math.multiplyExact(rows, rowLength);
        Segments segments = switch (layout) {
            case PACKED_CU_SEQLENS -> {
                if (rows != 1) {
                    throw new IllegalArgumentException("packed layout needs B = 1, tensor 'q' has B = " + rows);
                }
                yield Varlen.fromCuSeqlens(ints(file, "cu_seqlens", 1), tokens);
            }
            case BATCHED_SEGMENT_IDS -> {
                long[] idShape = shape(file, "segment_ids", 2);
                if (idShape[0] != rows || idShape[1] != rowLength) {
                    throw new IllegalArgumentException("tensor 'segment_ids' has shape " + Arrays.toString(idShape)
                            + ", expected [B,T] = [" + rows + "," + rowLength + "]");
                }
                yield Varlen.fromSegmentIds(file.get("segment_ids").toIntArray(), rows, rowLength);
            }
        };
        KdaOptions options = options(file);
        KdaInputs inputs = new KdaInputs(segments, heads, valueHeads, keyDim, valueDim,
                floats(file, "q"), floats(file, "k"), floats(file, "v"), floats(file, "g"), floats(file, "beta"),
                optionalFloats(file, "A_log"), optionalFloats(file, "dt_bias"), optionalFloats(file, "h0"));
        inputs.validate(options);
        float[] dO = floats(file, "do");
        float[] dHt = optionalFloats(file, "dht");
        inputs.validateUpstream(dO, dHt);
        return new KdaCase(layout, rows, rowLength, inputs, options, dO, dHt);
    }

    /**
     * Outputs and gradients under the golden names ({@code o, ht, dq, dk, dv, dg, dbeta} and, where they
     * apply, {@code dh0, dA_log, ddt_bias}) and shapes, stored as {@code dtype} (F32 or F64).
     */
    public SafeTensors results(KdaBackend.KdaResult result, KdaBackend.KdaGradients grads, DType dtype) {
        long b = rows;
        long t = rowLength;
        long n = inputs.sequences();
        long h = inputs.heads();
        long hv = inputs.valueHeads();
        long k = inputs.keyDim();
        long v = inputs.valueDim();
        SafeTensors.Builder out = SafeTensors.builder()
                .meta("kind", "kda_result")
                .meta("layout", layout.key())
                .put(Tensor.ofFloats("o", result.o(), dtype, b, t, hv, v))
                .put(Tensor.ofFloats("ht", result.ht(), dtype, n, hv, k, v))
                .put(Tensor.ofFloats("dq", grads.dq(), dtype, b, t, h, k))
                .put(Tensor.ofFloats("dk", grads.dk(), dtype, b, t, h, k))
                .put(Tensor.ofFloats("dv", grads.dv(), dtype, b, t, hv, v))
                .put(Tensor.ofFloats("dg", grads.dg(), dtype, b, t, hv, k))
                .put(Tensor.ofFloats("dbeta", grads.dBeta(), dtype, b, t, hv));
        if (grads.dH0() != null) {
            out.put(Tensor.ofFloats("dh0", grads.dH0(), dtype, n, hv, k, v));
        }
        if (grads.dALog() != null) {
            out.put(Tensor.ofFloats("dA_log", grads.dALog(), dtype, hv));
        }
        if (grads.dDtBias() != null) {
            out.put(Tensor.ofFloats("ddt_bias", grads.dDtBias(), dtype, hv * k));
        }
        return out.build();
    }

    private static KdaOptions options(SafeTensors file) {
        String scaleText = file.meta("scale", "NaN");
        float scale;
        try {
            scale = Float.parseFloat(scaleText);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("metadata scale = '" + scaleText + "' is not a number");
        }
        boolean gateInOp = flag(file, "use_gate_in_kernel");
        String lowerBound = file.meta("lower_bound", "none");
        KdaOptions.Gate gate = !gateInOp ? KdaOptions.Gate.NONE
                : lowerBound.equals("none") ? KdaOptions.Gate.SOFTPLUS : KdaOptions.Gate.LOWER_BOUND;
        float bound = 0f;
        if (gate == KdaOptions.Gate.LOWER_BOUND) {
            try {
                bound = Float.parseFloat(lowerBound);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("metadata lower_bound = '" + lowerBound
                        + "' is neither 'none' nor a number");
            }
        }
        return new KdaOptions(scale, flag(file, "use_qk_l2norm_in_kernel"), gate, bound,
                flag(file, "use_beta_sigmoid_in_kernel"));
    }

    private static boolean flag(SafeTensors file, String key) {
        String value = file.meta(key, "false");
        return switch (value) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("metadata " + key + " = '" + value
                    + "', expected 'true' or 'false'");
        };
    }

    private static long[] shape(SafeTensors file, String name, int rank) {
        Tensor t = file.get(name);
        if (t.rank() != rank) {
            throw new IllegalArgumentException("tensor '" + name + "' has shape " + Arrays.toString(t.shape())
                    + ", expected rank " + rank);
        }
        return t.shape();
    }

    private static int dim(long[] shape, int axis) {
        return Math.toIntExact(shape[axis]);
    }

    private static int[] ints(SafeTensors file, String name, int rank) {
        shape(file, name, rank);
        return file.get(name).toIntArray();
    }

    private static float[] floats(SafeTensors file, String name) {
        Tensor t = file.get(name);
        if (t.dtype() != DType.F32 && t.dtype() != DType.F64 && t.dtype() != DType.BF16 && t.dtype() != DType.F16) {
            throw new IllegalArgumentException("tensor '" + name + "' has dtype " + t.dtype()
                    + ", expected a float dtype");
        }
        return t.toFloatArray();
    }

    private static float[] optionalFloats(SafeTensors file, String name) {
        return file.has(name) ? floats(file, name) : null;
    }
}
