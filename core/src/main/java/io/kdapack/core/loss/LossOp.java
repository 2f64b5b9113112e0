package io.kdapack.core.loss;

import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The loss on a Megatron loss golden file ({@code golden/megatron/README.md} §6): reads {@code logits [N,L,V]},
 * {@code labels [N,L]}, {@code loss_mask [N,L]} and the micro-batch layout (metadata {@code micro_batch_size} B,
 * {@code num_microbatches} M, N = B·M, micro-batch m = rows m·B … m·B+B−1) and computes the loss tensors under
 * the golden names: {@code per_token_loss, microbatch_loss_sum, microbatch_num_tokens, loss_per_microbatch_mean,
 * loss_per_token, lm_loss_logged, loss_per_microbatch_mean_with_empty_microbatch, grad_logits_per_microbatch_mean,
 * grad_logits_per_token}.
 */
public final class LossOp {

    private LossOp() {
    }

    /** Runs the loss on the tensors of {@code in}; malformed input is an {@link IllegalArgumentException}. */
    public static SafeTensors run(SafeTensors in) {
        Tensor logitsTensor = in.get("logits");
        if (logitsTensor.rank() != 3) {
            throw new IllegalArgumentException("logits: expected shape [N,L,V], got " + Arrays.toString(logitsTensor.shape()));
        }
        int samples = Math.toIntExact(logitsTensor.dim(0));
        int length = Math.toIntExact(logitsTensor.dim(1));
        int vocab = Math.toIntExact(logitsTensor.dim(2));
        Tensor labelsTensor = requireShape(in.get("labels"), samples, length);
        Tensor maskTensor = requireShape(in.get("loss_mask"), samples, length);
        int microBatchSize = positiveIntMeta(in, "micro_batch_size");
        int numMicroBatches = positiveIntMeta(in, "num_microbatches");
        if ((long) microBatchSize * numMicroBatches != samples) {
            throw new IllegalArgumentException("micro-batch layout: micro_batch_size " + microBatchSize + " × num_microbatches "
                    + numMicroBatches + " != " + samples + " samples in logits");
        }

        float[] logits = logitsTensor.toFloatArray();
        int[] labels = labelsTensor.toIntArray();
        float[] mask = maskTensor.toFloatArray();
        CrossEntropy.Result ce = CrossEntropy.forward(logits, labels, vocab);

        int tokensPerMicroBatch = microBatchSize * length;
        List<LossReport> reports = new ArrayList<>();
        for (int m = 0; m < numMicroBatches; m++) {
            int from = m * tokensPerMicroBatch;
            int to = from + tokensPerMicroBatch;
            reports.add(LossReport.of(Arrays.copyOfRange(ce.loss(), from, to), Arrays.copyOfRange(mask, from, to)));
        }
        List<LossReport> withEmpty = new ArrayList<>(reports);
        withEmpty.add(LossReport.EMPTY);

        long[] shapeNL = {samples, length};
        long[] shapeNLV = {samples, length, vocab};
        SafeTensors.Builder out = SafeTensors.builder().metadata(in.metadata())
                .put(Tensor.of("per_token_loss", ce.loss(), shapeNL))
                .put(Tensor.of("microbatch_loss_sum", reports.stream().mapToDouble(LossReport::sum).toArray(), numMicroBatches))
                .put(Tensor.of("microbatch_num_tokens", reports.stream().mapToLong(LossReport::count).toArray(), numMicroBatches))
                .put(Tensor.of("loss_per_microbatch_mean", new double[] {LossScaling.objective(LossMode.PER_MICROBATCH_MEAN, reports)}))
                .put(Tensor.of("loss_per_token", new double[] {LossScaling.objective(LossMode.PER_TOKEN, reports)}))
                .put(Tensor.of("lm_loss_logged", new double[] {LossReport.logged(reports)}))
                .put(Tensor.of("loss_per_microbatch_mean_with_empty_microbatch",
                        new double[] {LossScaling.objective(LossMode.PER_MICROBATCH_MEAN, withEmpty)}));
        for (LossMode mode : LossMode.values()) {
            float[] grad = gradient(LossScaling.of(mode, reports), logits, labels, vocab, mask, ce.logSumExp(), tokensPerMicroBatch);
            String name = mode == LossMode.PER_TOKEN ? "grad_logits_per_token" : "grad_logits_per_microbatch_mean";
            out.put(Tensor.ofFloats(name, grad, DType.F64, shapeNLV));
        }
        return out.build();
    }

    /** ∂ objective / ∂ logits {@code [N,L,V]}, one micro-batch's tokens weighted at a time. */
    private static float[] gradient(LossScaling scaling, float[] logits, int[] labels, int vocab, float[] mask,
                                    double[] logSumExp, int tokensPerMicroBatch) {
        double[] weights = new double[labels.length];
        for (int m = 0; m < scaling.numMicroBatches(); m++) {
            int from = m * tokensPerMicroBatch;
            double[] w = scaling.tokenWeights(m, Arrays.copyOfRange(mask, from, from + tokensPerMicroBatch));
            System.arraycopy(w, 0, weights, from, w.length);
        }
        float[] grad = new float[logits.length];
        CrossEntropy.backward(logits, labels, vocab, logSumExp, weights, grad);
        return grad;
    }

    private static Tensor requireShape(Tensor t, int samples, int length) {
        if (t.rank() != 2 || t.dim(0) != samples || t.dim(1) != length) {
            throw new IllegalArgumentException(t.name() + ": expected shape [" + samples + ", " + length + "] like logits, got "
                    + Arrays.toString(t.shape()));
        }
        return t;
    }

    private static int positiveIntMeta(SafeTensors in, String key) {
        String value = in.meta(key);
        try {
            int v = Integer.parseInt(value.trim());
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("metadata '" + key + "' = '" + value + "', expected an integer > 0");
    }
}
