package io.kdapack.training;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.loss.LossMode;
import io.kdapack.core.loss.LossScaling;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.LanguageModel;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.core.model.ModelWeights;
import io.kdapack.training.MicroBatchAssembler;
import java.util.Arrays;

/**
 * One forward and backward pass of a model on one micro-batch, in tensors: how anyone checks kdapack against another
 * implementation with the same weights ({@code kdapack eval}).
 *
 * <p>Input batch {@code [B,L]}: {@code tokens, labels, position_ids, segment_ids} (integer dtypes) and
 * {@code loss_mask} (0/1, any dtype). With MTP the targets and mask are rolled left by one within each segment
 * ({@link io.kdapack.data.segment.MtpRoll}). The objective is Megatron's with one micro-batch ({@link LossMode#PER_MICROBATCH_MEAN}, M = 1):
 * {@code loss + loss_factor · mtp_loss} with {@code loss = Σ ce·mask / max(Σ mask, 1)} and likewise {@code mtp_loss}
 * over the rolled mask.
 *
 * <p>Output: {@code per_token_loss [B,L]} (F64, 0 where masked), {@code loss} and {@code count} (scalars),
 * {@code mtp_per_token_loss [B,L]} and {@code mtp_loss}, {@code mtp_count} when MTP is on, and
 * {@code grad.<weight name>} (F32, the weight's shape) for every weight: the gradient of the objective.
 */
public final class ModelEval {
    private static final String[] INTEGER_INPUTS = {"tokens", "labels", "position_ids", "segment_ids"};

    private ModelEval() {
    }

    /** Runs {@code model} (weights loaded, gradients are overwritten) on the batch tensors. */
    public static SafeTensors evaluate(HybridModel model, SafeTensors batchFile) {
        MicroBatch batch = readBatch(batchFile, model.mtpDepth());
        long[] shape = {batch.rows(), batch.length()};
        LossScaling scaling = LossScaling.of(LossMode.PER_MICROBATCH_MEAN, new long[] {batch.lossTokens()});
        int depth = model.mtpDepth();
        double mtpWeight = depth == 0 ? 0
                : scaling.mtpTokenWeight(0, batch.mtpLossTokens(), model.config().mtp().lossFactor(), depth);
        model.parameters().forEach(p -> p.zeroGrad());
        LanguageModel.Output out = model.run(batch, new LanguageModel.LossWeights(scaling.tokenWeight(0), mtpWeight));

        SafeTensors.Builder result = SafeTensors.builder()
                .put(Tensor.of("per_token_loss", out.perTokenLoss(), shape))
                .put(Tensor.of("loss", new double[] {mean(out.lossSum(), out.lossCount())}))
                .put(Tensor.of("count", new long[] {out.lossCount()}));
        if (depth > 0) {
            result.put(Tensor.of("mtp_per_token_loss", out.mtpPerTokenLoss(), shape))
                    .put(Tensor.of("mtp_loss", new double[] {mean(out.mtpLossSum(), out.mtpLossCount())}))
                    .put(Tensor.of("mtp_count", new long[] {out.mtpLossCount()}));
        }
        return ModelWeights.putGradients(result, model.parameters(), "grad.").build();
    }

    private static double mean(double sum, long count) {
        return count == 0 ? 0.0 : sum / count;
    }

    /** The micro-batch of the batch tensors, with MTP targets rolled within segments when {@code mtpDepth} is 1. */
    public static MicroBatch readBatch(SafeTensors file, int mtpDepth) {
        long[] shape = file.get("tokens").shape();
        if (shape.length != 2 || shape[0] < 1 || shape[1] < 1) {
            throw new IllegalArgumentException("tokens: expected shape [B,L] with B, L >= 1, got "
                    + Arrays.toString(shape));
        }
        for (String name : new String[] {"labels", "loss_mask", "position_ids", "segment_ids"}) {
            if (!Arrays.equals(file.get(name).shape(), shape)) {
                throw new IllegalArgumentException(name + ": expected shape " + Arrays.toString(shape)
                        + " like tokens, got " + Arrays.toString(file.get(name).shape()));
            }
        }
        int rows = Math.toIntExact(shape[0]);
        int length = Math.toIntExact(shape[1]);
        int[][] ints = new int[INTEGER_INPUTS.length][];
        for (int i = 0; i < INTEGER_INPUTS.length; i++) {
            ints[i] = file.get(INTEGER_INPUTS[i]).toIntArray();
        }
        int[] tokens = ints[0];
        int[] labels = ints[1];
        int[] positions = ints[2];
        int[] segmentIds = ints[3];
        float[] mask = file.get("loss_mask").toFloatArray();
        return MicroBatchAssembler.of(rows, length, tokens, labels, mask, positions, segmentIds, mtpDepth);
    }
}
