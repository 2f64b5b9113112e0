package io.kdapack.training;

import io.kdapack.core.loss.LossReport;
import io.kdapack.training.pipeline.MicroBatchLoss;
import java.util.ArrayList;
import java.util.List;

/**
 * Micro-batch loss reports as longs for a data-parallel all-gather, bit for bit: per micro-batch the raw bits of the
 * main loss sum, its count, and with MTP the same two for the MTP report.
 */
final class LossCodec {

    private LossCodec() {
    }

    static long[] encode(List<MicroBatchLoss> losses, boolean mtp) {
        int width = mtp ? 4 : 2;
        long[] out = new long[width * losses.size()];
        for (int i = 0; i < losses.size(); i++) {
            MicroBatchLoss loss = losses.get(i);
            out[width * i] = Double.doubleToRawLongBits(loss.main().sum());
            out[width * i + 1] = loss.main().count();
            if (mtp) {
                out[width * i + 2] = Double.doubleToRawLongBits(loss.mtp().sum());
                out[width * i + 3] = loss.mtp().count();
            }
        }
        return out;
    }

    static List<MicroBatchLoss> decode(long[] encoded, int count, boolean mtp) {
        int width = mtp ? 4 : 2;
        if (encoded.length != width * count) {
            throw new IllegalArgumentException("expected the loss reports of " + count + " micro-batches (" + width * count
                    + " longs), got " + encoded.length + " longs");
        }
        List<MicroBatchLoss> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            LossReport main = new LossReport(Double.longBitsToDouble(encoded[width * i]), encoded[width * i + 1]);
            LossReport mtpReport = mtp ? new LossReport(Double.longBitsToDouble(encoded[width * i + 2]),
                    encoded[width * i + 3]) : null;
            out.add(new MicroBatchLoss(main, mtpReport));
        }
        return out;
    }
}
